"""torch's CPU build for the tests of the runtime's framework paths: installed by `make frameworks` (`make test`
and `make unit` run it), so its absence is a broken install, which fails naming the fix instead of skipping."""

from __future__ import annotations

try:
    import torch
except ImportError as exc:  # pragma: no cover - the failure itself
    raise ImportError(
        f"torch does not import ({exc}): the unit tests of the runtime's framework paths need its CPU build in "
        ".venv; run `make frameworks` (`make test` and `make unit` do)"
    ) from exc

__all__ = ["torch"]
