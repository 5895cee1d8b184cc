"""The outputs each client asked for: only those are converted and sent.

Triton hands a request the names of the outputs its client asked for (every declared one when it named none:
``InferenceRequest::Normalize`` in core). PyTriton 0.5.12 passes them to the callable as
``Request.requested_output_names``, and so does :class:`repogen.runtime.request.Request`; a callable may then
compute only those. Whatever it returns, an output nobody asked for is never converted, moved off a GPU or copied
into a response: the runtime drops it from the result before anything else looks at it. (python_backend prunes the
responses ``execute`` returns before copying them to shared memory, on every release, but not a decoupled
response before r24.06, and never before the runtime converted them.)

Asking costs one call into the stub per request, so a model of one output never asks: its client gets that one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["asked_for", "requested_names", "trimmed", "wanted"]


def requested_names(request: Any) -> list[str] | None:
    """The names ``request``'s client asked for, sorted; None for a request made outside the server, or a fused
    step's (its outputs are the next step's inputs, not a client's), or one that names none."""
    source = request._source if request._handed else None
    read = getattr(source, "requested_output_names", None)
    if read is None:
        return None
    try:
        names = read()
    except Exception:  # a stand-in request, or the server process is gone: every output, as before
        return None
    return sorted(names) if names else None  # Triton never hands none: it fills in every output


def wanted(requests: list[Any], declared: int) -> list[frozenset[str] | None] | None:
    """Per request, the outputs its client asked for where that is not all ``declared`` of them, else None; None
    for the whole list when every client asked for all (the usual case, which then costs nothing more)."""
    if declared < 2:
        return None
    found: list[frozenset[str] | None] | None = None
    for index, request in enumerate(requests):
        names = requested_names(request)
        if names is None or len(names) >= declared:
            continue
        if found is None:
            found = [None] * len(requests)
        found[index] = frozenset(names)
    return found


def trimmed(result: Any, names: frozenset[str] | None, declared: tuple[str, ...]) -> Any:
    """``result`` without the ``declared`` outputs its client did not ask for (``names``); a sequence in the declared
    order becomes a dict first. Undeclared keys stay, for a strict model to refuse; anything else is left as it is."""
    if names is None:
        return result
    if isinstance(result, (list, tuple)) and len(result) == len(declared):
        result = dict(zip(declared, result, strict=True))
    if type(result) is not dict:
        return result
    return {name: value for name, value in result.items() if name in names or name not in declared}


def asked_for(results: list[Any], requests: list[Any] | None, declared: tuple[str, ...]) -> tuple[Any, list[Any]]:
    """Per request the outputs its client asked for (``wanted``: None for the whole list where every client asked for
    all), and ``results`` without the others (as they were where nothing is to drop)."""
    asked = wanted(requests, len(declared)) if requests is not None else None
    if asked is None:
        return None, results
    return asked, [trimmed(result, names, declared) for result, names in zip(results, asked, strict=True)]
