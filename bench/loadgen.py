"""Closed-loop load generator: one process per measured point, run by ``bench/run.py``.

``concurrency`` asyncio workers each keep exactly one request in flight (send, await the answer,
send again) for a warm-up and then a measured window; a request counts when it *completes*
inside the window. One process per point so that no client state (connections, allocator, GC
pressure) leaks from one implementation's measurement into the next one's. gRPC uses
``tritonclient.grpc.aio``; HTTP uses greenlets over the sync (geventhttpclient) client, because
``tritonclient.http.aio`` (aiohttp) takes ~840 ms per 4 MB request here against ~20 ms for the
sync client — it would measure the client, not the server. perf_analyzer is not
installable here (PyPI's ``perf-analyzer`` 0.1.0 is an empty placeholder and tritonclient's wheel
ships no binary), hence this.

Prints one JSON object: throughput (inferences/s), p50/p99/mean latency (ms), count, errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import numpy as np


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def _inputs(module: Any, data: np.ndarray, binary: bool) -> tuple[list[Any], list[Any]]:
    tensor = module.InferInput("x", list(data.shape), "FP32")
    if binary:
        tensor.set_data_from_numpy(data, binary_data=True)
        return [tensor], [module.InferRequestedOutput("y", binary_data=True)]
    tensor.set_data_from_numpy(data)
    return [tensor], [module.InferRequestedOutput("y")]


def _check(model: str, result: Any, data: np.ndarray) -> None:
    """Fail fast on a wrong answer shape before starting the clock."""
    if result.as_numpy("y").shape != data.shape:
        raise SystemExit(f"{model}: output shape {result.as_numpy('y').shape}, expected {data.shape}")


def _summary(latencies: list[float], errors: int, duration: float) -> dict[str, Any]:
    return {
        "throughput": len(latencies) / duration,
        "p50_ms": _percentile(latencies, 50) * 1e3,
        "p99_ms": _percentile(latencies, 99) * 1e3,
        "mean_ms": float(np.mean(latencies)) * 1e3 if latencies else float("nan"),
        "count": len(latencies),
        "errors": errors,
    }


async def measure_grpc(
    url: str, model: str, data: np.ndarray, concurrency: int, warmup: float, duration: float
) -> dict[str, Any]:
    """asyncio workers on one ``tritonclient.grpc.aio`` channel."""
    import tritonclient.grpc as module
    import tritonclient.grpc.aio as aio

    client = aio.InferenceServerClient(url)
    inputs, outputs = _inputs(module, data, binary=False)
    _check(model, await client.infer(model, inputs, outputs=outputs), data)
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter() + warmup
    end = start + duration

    async def worker() -> None:
        nonlocal errors
        while (sent := time.perf_counter()) < end:
            try:
                await client.infer(model, inputs, outputs=outputs)
            except Exception:  # counted, not fatal: a benchmark reports failures, it does not hide them
                errors += 1
                continue
            done = time.perf_counter()
            if start <= done <= end:
                latencies.append(done - sent)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    return _summary(latencies, errors, duration)


def measure_http(
    url: str, model: str, data: np.ndarray, concurrency: int, warmup: float, duration: float
) -> dict[str, Any]:
    """Greenlets sharing one sync client with ``concurrency`` keep-alive connections."""
    import gevent
    import tritonclient.http as module

    client = module.InferenceServerClient(url, concurrency=concurrency, connection_timeout=120, network_timeout=120)
    inputs, outputs = _inputs(module, data, binary=True)
    _check(model, client.infer(model, inputs, outputs=outputs), data)
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter() + warmup
    end = start + duration

    def worker() -> None:
        nonlocal errors
        while (sent := time.perf_counter()) < end:
            try:
                client.infer(model, inputs, outputs=outputs)
            except Exception:
                errors += 1
                continue
            done = time.perf_counter()
            if start <= done <= end:
                latencies.append(done - sent)

    gevent.joinall([gevent.spawn(worker) for _ in range(concurrency)])
    client.close()
    return _summary(latencies, errors, duration)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=("grpc", "http"), required=True)
    parser.add_argument("--url", required=True, help="host:port of that protocol")
    parser.add_argument("--model", required=True)
    parser.add_argument("--elements", type=int, required=True, help="float32 elements per request")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args(argv)
    data = np.arange(args.elements, dtype=np.float32).reshape(1, args.elements)
    point = (args.url, args.model, data, args.concurrency, args.warmup, args.duration)
    stats = asyncio.run(measure_grpc(*point)) if args.protocol == "grpc" else measure_http(*point)
    json.dump(stats, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
