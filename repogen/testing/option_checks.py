"""Requests that show whether a server runs with the options tests/apps/server_options/app.py depends on: the
response cache (``Cached`` answers how often its callable ran) and the rate limiter (``Limited``'s instances answer
when they ran). Shared by the tests that serve it here and in containers."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import numpy as np

from .client import PROTOCOLS, infer

__all__ = ["cached_calls", "limited_spans", "overlaps"]

Span = tuple[float, float, int]
"""An execution of ``Limited``: its start and end (``time.time()`` in the server) and the instance's pid."""


def cached_calls(protocol: str, server: Any, x: float) -> int:
    """How many times ``Cached``'s callable had run when it answered this request (a cached answer repeats one)."""
    return int(infer(protocol, server, "Cached", {"x": np.array([x], dtype=np.float32)})["calls"][0])


def limited_spans(server: Any, count: int = 6) -> list[Span]:
    """``count`` requests to ``Limited`` at once, half over each protocol: each one's span, by start."""

    def one(index: int) -> Span:
        answer = infer(PROTOCOLS[index % 2], server, "Limited", {"x": np.array([1.0], dtype=np.float32)})
        return float(answer["span"][0]), float(answer["span"][1]), int(answer["pid"][0])

    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        return sorted(pool.map(one, range(count)))


def overlaps(spans: list[Span]) -> list[tuple[int, int]]:
    """Pairs of executions (indices, by start) that ran at the same time."""
    return [(i, i + 1) for i in range(len(spans) - 1) if spans[i + 1][0] < spans[i][1]]
