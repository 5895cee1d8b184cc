"""Triton's shape rule, ``-1`` is any size: one home for the comparison that the in-process runner,
``repogen infer`` and the ensemble wiring rules all make."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["dims_compatible", "dims_match"]


def dims_match(found: Sequence[int], declared: Sequence[int]) -> bool:
    """A concrete shape against declared dims (``-1``: any size)."""
    return len(found) == len(declared) and all(d == -1 or d == f for f, d in zip(found, declared, strict=True))


def dims_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    """Two declared shapes that can hold the same tensor (``-1`` on either side matches any size)."""
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b, strict=True))
