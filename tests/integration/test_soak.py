"""Soak: 10,000 gRPC requests at concurrency 16 against a dynamically batched @batch model.

Proves that the runtime's per-request path neither fails under sustained concurrent load nor
leaks: the model's backend stub RSS (VmRSS) after the run stays within 10% of its value after a
1,000-request warm-up (allocator pools and lazily imported modules settle during warm-up).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc.aio as grpcaio

from repogen.testing.client import infer

pytestmark = [pytest.mark.integration, pytest.mark.soak]

MODEL = "Batched"
TOTAL = 10_000
WARMUP = 1_000
CONCURRENCY = 16
MAX_RSS_GROWTH = 0.10


@dataclass
class Load:
    """What one stretch of load did: requests answered correctly, failures, wall time."""

    ok: int = 0
    failed: int = 0
    seconds: float = 0.0


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("soak") / "repo"
    cli_build("tests/apps/traffic/app.py:models", repo)
    return serve(repo)


def stub_pid(server, model: str) -> int:
    """The backend stub serving ``model``: its command line names the model's ``model.py``."""
    marker = f"/{model}/1/model.py".encode()
    for pid in server.process_group_pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"triton_python_backend_stub") and any(arg.endswith(marker) for arg in argv):
            return pid
    raise AssertionError(f"no triton_python_backend_stub for {model} among {server.process_group_pids()}")


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB, from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no VmRSS line")


async def _worker(client: grpcaio.InferenceServerClient, first: int, count: int, load: Load) -> None:
    """Send requests ``first``, ``first + CONCURRENCY``, ... one after another, checking each answer."""
    for i in range(first, count, CONCURRENCY):
        x = np.array([[i, -i]], dtype=np.float32)
        tensor = grpcaio.InferInput("x", [1, 2], "FP32")
        tensor.set_data_from_numpy(x)
        try:
            result = await client.infer(MODEL, [tensor])
        except Exception:
            load.failed += 1
            continue
        if np.array_equal(result.as_numpy("y"), x * 2):
            load.ok += 1
        else:
            load.failed += 1


async def _drive(url: str, count: int) -> Load:
    load = Load()
    client = grpcaio.InferenceServerClient(url)
    try:
        started = time.perf_counter()
        await asyncio.gather(*(_worker(client, first, count, load) for first in range(CONCURRENCY)))
        load.seconds = time.perf_counter() - started
    finally:
        await client.close()
    return load


def drive(server, count: int) -> Load:
    """``count`` requests, ``CONCURRENCY`` in flight at any time, over one gRPC channel."""
    return asyncio.run(_drive(server.grpc_url, count))


def test_ten_thousand_requests_without_failures_or_stub_growth(server):
    pid = stub_pid(server, MODEL)
    warmup = drive(server, WARMUP)
    assert (warmup.ok, warmup.failed) == (WARMUP, 0)
    rss_warm = rss_kib(pid)
    soak = drive(server, TOTAL - WARMUP)
    rss_end = rss_kib(pid)
    assert (soak.ok, soak.failed) == (TOTAL - WARMUP, 0)
    assert stub_pid(server, MODEL) == pid, "the stub restarted during the soak"
    growth = (rss_end - rss_warm) / rss_warm
    executions = int(infer("grpc", server, MODEL, {"x": np.zeros((1, 2), np.float32)})["calls"][0, 0]) - 1
    print(
        f"\nsoak: {TOTAL} requests at concurrency {CONCURRENCY}; "
        f"{soak.ok / soak.seconds:.0f} req/s after warm-up ({soak.seconds:.1f} s); "
        f"{executions} execute() calls (dynamic batching); "
        f"stub VmRSS {rss_warm} KiB after warm-up -> {rss_end} KiB at the end ({growth:+.1%})"
    )
    assert executions < TOTAL, "the dynamic batcher never merged requests"
    assert growth < MAX_RSS_GROWTH, f"stub RSS grew {growth:.1%}: {rss_warm} KiB -> {rss_end} KiB"
