"""The waiting points: an I/O-bound async callable, generated, against the same work written by hand.

The callable awaits ``WAIT_MS`` (a database, an HTTP service) and answers y = x (bench/apps/app.py's ``Waiting``).
Served concurrently (repogen.runtime.concurrency), one instance answers about ``c / WAIT`` requests per second at
concurrency c until the CPUs run out; what is compared is the serving path around the wait:

* streams: the generated ``Waiting`` (decoupled: one response, then the final flag) and ``WaitingHW``, python_backend's
  own async ``execute`` of a decoupled model (r24.04+), read over gRPC streams (perf_analyzer ``--streaming``);
* request/response: the generated ``WaitingRR`` (what plain HTTP and gRPC clients call) and ``WaitingRRHW``, a
  hand-written model with an event loop of its own answering through response senders (r24.06+), over plain gRPC;
  ``WaitingOne`` (``max_concurrency=1``) serves one request at a time, as an async callable was served before.

Every hand-written model runs under its generated twin's config.pbtxt (bench/repos.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import perf
import stats

from repogen.testing.callgrind import QUIET

WAIT_MS = 20  # bench/apps/app.py's WAIT_S
CONCURRENCIES = (1, 16, 64)
# group -> (protocol as perf_analyzer is run, {implementation: model})
GROUPS = {
    "waiting, streams": ("grpc-stream", {"generated": "Waiting", "hand-written": "WaitingHW"}),
    "waiting, request/response": (
        "grpc", {"generated": "WaitingRR", "hand-written": "WaitingRRHW", "one at a time": "WaitingOne"}
    ),
}  # fmt: skip


_X = {"x": np.zeros(1, np.float32)}
# callgrind, one request at a time (bench/run.py's COUNTED): each group's generated model, its hand-written twin
# (report.py divides by the second), and the generated one without the cancellation checks valgrind's pace sets off.
COUNTED = {
    f"{group}, one at a time": tuple(
        (label, model, _X)
        for label, model in (*impls.items(), ("generated, no cancellation check", f"{impls['generated']}{QUIET}"))
        if label != "one at a time"
    )
    for group, (_, impls) in GROUPS.items()
}


def run_round(analyzer: Any, url: str, window: float, rnd: int, samples: list[dict[str, Any]]) -> None:
    """Every waiting point once, implementations in a rotating order, each ratio's pair within the round."""
    for group, (protocol, impls) in GROUPS.items():
        names = list(impls)
        order = names[rnd % len(names) :] + names[: rnd % len(names)]
        for concurrency in CONCURRENCIES:
            for impl in order:
                model = impls[impl]
                streaming = protocol == "grpc-stream"
                measured = perf.measure(analyzer, model, url, "grpc", {}, concurrency, window, streaming=streaming)
                samples.append({"group": group, "payload": f"await {WAIT_MS} ms", "impl": impl, "model": model,
                                "protocol": protocol, "elements": 1, "concurrency": concurrency, "round": rnd,
                                **measured})  # fmt: skip
                print(f"  {group:26s} c={concurrency:<3d} {impl:14s} {measured['throughput']:8.1f} req/s", flush=True)


def ratios(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goal rows: generated against hand-written throughput, per group and concurrency; the one-at-a-time
    reference beside them."""
    rows: list[dict[str, Any]] = []
    for group, (protocol, impls) in GROUPS.items():
        for c in CONCURRENCIES:
            key = (group, protocol, 1, c)
            for den in impls:
                if den == "generated":
                    continue
                value = stats.round_ratio(samples, key, "generated", den, "throughput")
                if value is not None:
                    goal = ">= 0.97" if den == "hand-written" else "reference"
                    rows.append({"name": f"{group}: generated/{den} requests/s (await {WAIT_MS} ms, c={c})",
                                 "goal": goal, **value})  # fmt: skip
    return rows
