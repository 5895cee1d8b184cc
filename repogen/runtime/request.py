"""The request object handed to an undecorated callable, shaped like PyTriton's, and one request's failures."""

from __future__ import annotations

import json
from typing import Any

from .cancellation import is_cancelled
from .errors import INVALID_ARG, InferenceError
from .requested import requested_names


class EmptyBatchError(InferenceError):
    """A request with batch size 0 reached the model (tritonserver 2.39 / 2.41 let it through).

    Those releases strip the batch dimension and hand over uninitialized memory of one row, so
    the runtime refuses the request instead of computing on garbage; 2.51 rejects it itself. The client's fault:
    INVALID_ARG, as 2.51's own refusal.
    """

    code = INVALID_ARG

    def __init__(self, model: str, name: str):
        super().__init__(
            f"model '{model}' input '{name}': the request has an empty batch (batch size 0); send at least one row"
        )


class StepFailure:
    """One request's failure: a fused pipeline's step failed it, or an ONNX session (onnx_session.py) refused it.

    A callable's result list may hold one in place of a request's outputs: that request alone is answered
    with ``exc``; the model's other requests are answered as usual.
    """

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


def batched_input_ranks(config: dict[str, Any]) -> dict[str, int]:
    """Rank each input of a batching model has in ``execute``: the batch dimension plus its dims (or reshape).

    An input arriving with a lower rank is an empty batch that the server passed on (see EmptyBatchError).
    """
    ranks = {}
    for tensor in config.get("input", []):
        dims = tensor["reshape"].get("shape", []) if "reshape" in tensor else tensor["dims"]
        ranks[tensor["name"]] = 1 + len(dims)
    return ranks


class Request(dict):  # type: ignore[type-arg]
    """A mapping of input name to numpy array, plus the request's parameters.

    A ``dict`` subclass rather than a wrapper so that the hot path builds it in one step and
    PyTriton-style code (``request["x"]``, ``request.items()``, ``**request``) works unchanged.
    Parameters are parsed from the server's request only when a callable reads them.
    """

    __slots__ = ("_handed", "_parameters", "_source")

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        parameters: dict[str, Any] | None = None,
        source: Any = None,
        handed: bool = True,
    ):
        """``source``: the server's request; ``handed``: whether its inputs are this request's (not a fused step's)."""
        if data:
            super().__init__(data)
        self._parameters = parameters
        self._source = source
        self._handed = handed

    @property
    def data(self) -> dict[str, Any]:
        """PyTriton exposes the tensors as ``request.data``; here the request is the data."""
        return self

    @property
    def parameters(self) -> dict[str, Any]:
        if self._parameters is None:
            self._parameters = _parse_parameters(self._source)
        return self._parameters

    @parameters.setter
    def parameters(self, value: dict[str, Any]) -> None:
        self._parameters = value

    @property
    def requested_output_names(self) -> list[str] | None:
        """The outputs this request's client asked for, sorted (every declared one when it named none), as
        PyTriton 0.5.12's ``Request`` has them: a callable may compute only these. Whatever it returns, only these
        are converted and sent (runtime/requested.py). None for a request made up outside the server."""
        return requested_names(self)

    def handed_on_cpu(self, name: str) -> bool:
        """Whether python_backend handed input ``name`` in host memory: ``is_cpu()`` of its own tensor, as it came,
        before anything here read or moved it (a framework model gets its tensors on its device either way)."""
        source = self._source if self._handed else None
        for tensor in source.inputs() if source is not None else ():
            if tensor.name() == name:
                return bool(tensor.is_cpu())
        raise InferenceError(
            f"input '{name}' was not handed to this request by python_backend (a fused step's input comes from the "
            "step before it, in this process; a request made here has no server's request): nothing says where it was"
        )

    def traced_span(self, span_name: str) -> Any:
        """PyTriton 0.7's: ``with request.traced_span("step"):`` opens a span of the callable's own under this
        request's span, where the request is traced (runtime/tracing.py)."""
        from .tracing import traced_span

        return traced_span(self, span_name)

    def is_cancelled(self) -> bool:
        """Whether the client gave up on this request (a cancelled call or stream, a timeout), so that a
        long-running callable can stop early. Not in PyTriton; always False where the server cannot say
        (tritonserver before 2.39) and for a request made up outside the server."""
        return self._source is not None and is_cancelled(self._source)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Request, (dict(self), self.parameters))


def _parse_parameters(source: Any) -> dict[str, Any]:
    if source is None:
        return {}
    read = getattr(source, "parameters", None)
    if read is None:
        raise InferenceError(
            "request parameters are not available on this tritonserver: its Python backend has no "
            "InferenceRequest.parameters(); serve with tritonserver 2.39 (NGC 23.10) or newer, which have it"
        )
    text = read()
    return json.loads(text) if text else {}
