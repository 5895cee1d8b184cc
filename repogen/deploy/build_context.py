"""Paths inside a Docker build context: what a Dockerfile's ``COPY`` can name.

Its own module because both the Dockerfile writer and the signature-verifying stage place files in the context,
and the verifier is a part of the Dockerfile, never the other way round.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

__all__ = ["context_path"]


def context_path(path: Path, context: Path, what: str) -> str:
    """``path`` relative to ``context`` (POSIX), or a UsageError naming ``what`` lies outside: COPY sees no further."""
    try:
        relative = path.resolve().relative_to(context.resolve())
    except ValueError:
        raise UsageError(
            f"{what} {path} is outside the Docker build context {context}; expected a path under it. "
            "Pass --context with a directory that contains it."
        ) from None
    return relative.as_posix() or "."
