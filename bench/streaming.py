"""The streaming points: a generated token generator against the same generator written by hand.

A decoupled model answers one request with a stream of responses. perf_analyzer's streaming mode (gRPC,
``--streaming``) sends each request on a bidirectional stream and reports, for a decoupled model, the
responses per second and the latency of each stream's first response (time to first response). The
generated ``Tokens`` (bench/apps/app.py) yields ``TOKENS`` int32 tokens as fast as they can go;
``TokensHW`` sends the same tokens from a hand-written ``model.py`` that never asks about cancellation,
``TokensHWPolling`` asks ``request.is_cancelled()`` before every token, as python_backend's docs do. All
three run under the generated model's config.pbtxt (decoupled, max_batch_size 0, one CPU instance).

What a cancelled stream still costs: ``SlowTokens`` and its two hand-written twins make a token every
20 ms; a client reads ``CANCEL_AFTER`` of ``SLOW_TOKENS`` tokens and cancels the stream; then asks the model
(n = -1) how many tokens it made while its request was already cancelled, counted by the model.
"""

from __future__ import annotations

import json
import queue
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import perf
import stats
import tritonclient.grpc as grpcclient

from repogen.testing.callgrind import QUIET
from repogen.testing.client import stream

TOKENS = 20  # tokens per stream in the throughput points
CONCURRENCIES = (1, 16)
IMPLS = {"generated": "Tokens", "hand-written": "TokensHW", "hand-written, polling": "TokensHWPolling"}
CANCEL_IMPLS = {
    "generated": "SlowTokens", "hand-written": "SlowTokensHW", "hand-written, polling": "SlowTokensHWPolling"
}  # fmt: skip
SLOW_TOKENS, CANCEL_AFTER, CANCELLED_STREAMS = 200, 5, 2  # per implementation and round
SLOW_TOKEN_MS = 20  # apps/app.py's SLOW_TOKEN_S
COUNTED_GROUP = f"stream of {TOKENS} tokens"
# Counted after the baselines (report.py divides by them): also the generated model without the cancellation checks
# that valgrind's pace sets off (repogen/testing/callgrind.quiet_copy), the stream a full-speed stub serves.
COUNTED = tuple(
    (label, model, {"n": np.array([TOKENS], np.int32)})
    for label, model in (*IMPLS.items(), ("generated, no cancellation check", f"{IMPLS['generated']}{QUIET}"))
)


def measure(analyzer: Any, model: str, url: str, concurrency: int, window_s: float) -> dict[str, Any]:
    """One perf_analyzer streaming run of ``TOKENS``-token streams, with the time to first response."""
    with tempfile.TemporaryDirectory(prefix="repogen-stream-") as tmp:
        data, profile = Path(tmp) / "input.json", Path(tmp) / "profile.json"
        data.write_text(json.dumps({"data": [{"n": [TOKENS]}]}))
        figures = perf.measure(analyzer, model, url, "grpc", {}, concurrency, window_s, input_data=str(data),
                               streaming=True, profile=profile)  # fmt: skip
        return figures | first_responses(json.loads(profile.read_text()))


def first_responses(export: dict[str, Any]) -> dict[str, float]:
    """Time to first response, p50 and p99 in µs, of the streams sent in the windows perf_analyzer kept.

    perf_analyzer 2.41's own latency columns of a decoupled model are to its last response (measured: they
    match the profile's last timestamps, not its first), so the first is read from the profile export: every
    request's send time and response times, and the boundaries of the windows of its last experiment, whose
    last three are the stable ones it reports.
    """
    experiment = export["experiments"][-1]
    bounds = experiment["window_boundaries"]
    start, end = (bounds[-4], bounds[-1]) if len(bounds) >= 4 else (bounds[0], bounds[-1])
    waits = sorted(
        (r["response_timestamps"][0] - r["timestamp"]) / 1e3
        for r in experiment["requests"]
        if r["response_timestamps"] and start <= r["timestamp"] < end
    )
    if not waits:
        raise RuntimeError("perf_analyzer's profile export holds no stream with a response in its last windows")
    return {"ttfr_p50_us": float(np.percentile(waits, 50)), "ttfr_p99_us": float(np.percentile(waits, 99)),
            "streams": len(waits)}  # fmt: skip


def run_round(point: Any, rnd: int) -> None:
    """Every streaming point once, implementations in a rotating order (``point`` measures and records one)."""
    names = list(IMPLS)
    order = names[rnd % len(names) :] + names[: rnd % len(names)]
    for concurrency in CONCURRENCIES:
        for impl in order:
            point(impl, IMPLS[impl], concurrency)


def cancelled_cost(server: Any, model: str) -> dict[str, float]:
    """Read ``CANCEL_AFTER`` tokens of a ``SLOW_TOKENS``-token stream, cancel it, and ask the model what it made
    after the cancellation (it answers once the cancelled stream's execute has returned: one instance)."""
    stream(server, model, {"n": np.array([-1], np.int32)}, timeout=60)  # zero the counts
    for _ in range(CANCELLED_STREAMS):
        _read_then_cancel(server, model)
    counts = stream(server, model, {"n": np.array([-1], np.int32)}, timeout=60)[0]
    produced, after = (int(v) for v in counts["token"])  # type: ignore[index]
    per_stream = after / CANCELLED_STREAMS
    return {"produced": produced / CANCELLED_STREAMS, "after_cancel": per_stream,
            "after_cancel_ms": per_stream * SLOW_TOKEN_MS}  # fmt: skip


def _read_then_cancel(server: Any, model: str) -> None:
    events: queue.Queue[Any] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        client.start_stream(callback=lambda result, error: events.put(error or result))
        tensor = grpcclient.InferInput("n", [1], "INT32")
        tensor.set_data_from_numpy(np.array([SLOW_TOKENS], np.int32))
        client.async_stream_infer(model, [tensor])
        for _ in range(CANCEL_AFTER):
            event = events.get(timeout=60)
            if isinstance(event, Exception):
                raise RuntimeError(f"{model}: {event}")
    finally:
        client.stop_stream(cancel_requests=True)
        client.close()


def ratios(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goal rows: generated against hand-written (no polling, as a stream that asks nothing costs least)."""
    rows: list[dict[str, Any]] = []
    for c in CONCURRENCIES:
        key = ("streaming", "grpc", TOKENS, c)
        for metric, what, goal in (("response_throughput", "responses/s", ">= 0.97"),
                                   ("ttfr_p50_us", "time to first response, p50", "<= 1.05")):  # fmt: skip
            for den in ("hand-written", "hand-written, polling"):
                value = stats.round_ratio(samples, key, "generated", den, metric)
                if value is not None:
                    rows.append({"name": f"streaming, {TOKENS} tokens a stream: generated/{den} {what} (c={c})",
                                 "goal": goal if den == "hand-written" else "reference", **value})  # fmt: skip
    return rows
