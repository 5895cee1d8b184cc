"""Soak: 10,000 gRPC streams, 16 at a time, every other one cancelled after 2 of its 6 tokens.

Proves that cancellation neither loses nor mixes up tokens of the streams read to their end, that each
cancelled generator stops and runs its finally:, and that the stub does not grow: its VmRSS after the run
stays within 10% of its value after a 1,000-stream warm-up.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from test_soak import MAX_RSS_GROWTH, rss_kib, stub_pid

pytestmark = [pytest.mark.integration, pytest.mark.soak]

MODEL = "Burst"
TOTAL = 10_000
WARMUP = 1_000
CONCURRENCY = 16
TOKENS = 6
READ = 2  # what a cancelled stream's reader takes


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("soak-streams") / "repo"
    cli_build("tests/apps/cancel/app.py:models", repo)
    return serve(repo)


def _one(client: grpcclient.InferenceServerClient, cancel: bool) -> bool:
    """One stream on ``client``: True when it got what it should (all tokens in order, or the first READ)."""
    events: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
    tensor = grpcclient.InferInput("n", [1], "INT32")
    tensor.set_data_from_numpy(np.array([TOKENS], np.int32))
    client.async_stream_infer(MODEL, [tensor], enable_empty_final_response=True)
    got, ended = [], False
    try:
        while not ended and not (cancel and len(got) == READ):
            event = events.get(timeout=60)
            if isinstance(event, Exception):
                return False
            response = event.get_response()
            if response.outputs:
                got.append(int(event.as_numpy("token")[0]))
            ended = response.parameters["triton_final_response"].bool_param
    finally:
        client.stop_stream(cancel_requests=not ended)
    return got == list(range(READ if cancel else TOKENS))


def _drive(server, first: int, count: int) -> int:
    """``count`` streams from ``CONCURRENCY`` threads, each with its own client; how many came out right."""

    def worker(offset: int) -> int:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            return sum(_one(client, (first + i) % 2 == 1) for i in range(offset, count, CONCURRENCY))
        finally:
            client.close()

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return sum(pool.map(worker, range(CONCURRENCY)))


def _report(server) -> list[int]:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    events: queue.Queue = queue.Queue()
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        tensor = grpcclient.InferInput("n", [1], "INT32")
        tensor.set_data_from_numpy(np.array([-1], np.int32))
        client.async_stream_infer(MODEL, [tensor])
        event = events.get(timeout=60)
        assert not isinstance(event, Exception), event
        return [int(v) for v in event.as_numpy("token")]
    finally:
        client.stop_stream()
        client.close()


def test_ten_thousand_streams_half_cancelled_without_loss_or_stub_growth(server):
    pid = stub_pid(server, MODEL)
    assert _drive(server, 0, WARMUP) == WARMUP
    rss_warm = rss_kib(pid)
    _report(server)  # from zero
    assert _drive(server, WARMUP, TOTAL - WARMUP) == TOTAL - WARMUP
    rss_end = rss_kib(pid)
    produced, after_cancel, closed = _report(server)
    streams, cancelled = TOTAL - WARMUP, (TOTAL - WARMUP) // 2
    growth = (rss_end - rss_warm) / rss_warm
    print(
        f"\nstream soak: {TOTAL} streams at concurrency {CONCURRENCY}, every other one cancelled after {READ} of "
        f"{TOKENS} tokens; after warm-up: {produced} tokens made for {streams - cancelled} * {TOKENS} + "
        f"{cancelled} * {READ} read, {after_cancel} after a cancellation, {closed} finally: blocks; "
        f"stub VmRSS {rss_warm} KiB -> {rss_end} KiB ({growth:+.1%})"
    )
    assert stub_pid(server, MODEL) == pid, "the stub restarted during the soak"
    assert closed == streams and after_cancel <= cancelled
    # beyond what readers took, a cancelled stream costs the token in flight and at most one made after it
    assert produced - (streams - cancelled) * TOKENS - cancelled * READ <= 2 * cancelled
    assert growth < MAX_RSS_GROWTH, f"stub RSS grew {growth:.1%}: {rss_warm} KiB -> {rss_end} KiB"
