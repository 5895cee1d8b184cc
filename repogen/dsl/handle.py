"""``ModelHandle``: what ``bind``, ``@model`` and ``@ensemble`` return — a reference to one model.

The handle itself does nothing. What a call means depends on who handles calls at that moment:

* while ``repogen.ir`` traces an ``@ensemble`` body, the tracer (installed with :func:`handling_calls`)
  records a step;
* inside a callable served by Triton, the build pickled the handle as a BLS client
  (``repogen.runtime.bls.ModelClient``), so this class is not involved;
* anywhere else, the model runs in this process through ``Repository.local()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Protocol

from ..runtime.call_options import CallOptions


class Declaration(Protocol):
    """A model or ensemble as declared (``ModelDefinition``, ``EnsembleDefinition``)."""

    @property
    def name(self) -> str: ...

    @property
    def outputs(self) -> tuple[Any, ...]: ...


class Runner(Protocol):
    """What a handle needs of its repository: a way to run it in this process."""

    def local(self) -> Any: ...


CallHandler = Callable[["ModelHandle", dict[str, Any]], Any]
_HANDLER: contextvars.ContextVar[CallHandler | None] = contextvars.ContextVar("repogen_call_handler", default=None)


@contextlib.contextmanager
def handling_calls(handler: CallHandler) -> Iterator[None]:
    """Route every handle call in this context to ``handler(handle, inputs)`` (the ensemble tracer)."""
    token = _HANDLER.set(handler)
    try:
        yield
    finally:
        _HANDLER.reset(token)


class ModelHandle:
    """A reference to one model (or ensemble) of a repository."""

    def __init__(
        self,
        repository: Runner,
        definition: Declaration,
        requested: tuple[str, ...] | None = None,
        memory: str | None = None,
        options: CallOptions | None = None,
    ):
        self.repository = repository
        self.definition = definition
        self.requested = requested
        self.memory = memory
        self.options = options or CallOptions()
        """What each call carries beside its tensors: version, parameters, timeout, sequence."""

    @property
    def name(self) -> str:
        return self.definition.name

    def outputs(self, *names: str) -> ModelHandle:
        """The same model, asking the server for these outputs only (less data over BLS)."""
        return ModelHandle(self.repository, self.definition, tuple(names), self.memory, self.options)

    def preferred_memory(self, memory: str) -> ModelHandle:
        """The same model, called through BLS with its outputs asked for in ``"gpu"`` memory (the calling
        instance's GPU) or ``"cpu"`` memory: Triton's ``preferred_memory``. Without it, outputs come where the
        called model made them (a model that takes numpy gets them in host memory)."""
        if memory not in ("cpu", "gpu"):
            raise ValueError(f"preferred_memory takes 'cpu' or 'gpu', found {memory!r}")
        return ModelHandle(self.repository, self.definition, self.requested, memory, self.options)

    def version(self, version: int) -> ModelHandle:
        """The same model, calling its version ``version`` (else the latest its version policy serves)."""
        return self._with(self.options.with_version(version))

    def parameters(self, parameters: Mapping[str, Any]) -> ModelHandle:
        """The same model, called with these request parameters (bool, int or str values), as a client sends them:
        ``handle.parameters(request.parameters)`` hands a callable's own on."""
        return self._with(self.options.with_parameters(parameters))

    def timeout(self, seconds: float) -> ModelHandle:
        """The same model, called through BLS with a timeout: a call not answered within ``seconds`` raises
        ``ModelCallTimeout`` then (a stream not ended by then, too), whatever the called model does meanwhile.
        In process (``repository.local()``) a call runs to its end."""
        return self._with(self.options.with_timeout(seconds))

    def sequence(self, correlation_id: int | str, start: bool = False, end: bool = False) -> ModelHandle:
        """The same model, called as one request of the sequence ``correlation_id`` of a ``SequenceBatcher`` model:
        ``start=True`` on the sequence's first request, ``end=True`` on its last (Triton's sequence flags)."""
        return self._with(self.options.with_sequence(correlation_id, start, end))

    def _with(self, options: CallOptions) -> ModelHandle:
        return ModelHandle(self.repository, self.definition, self.requested, self.memory, options)

    def __call__(self, **inputs: Any) -> Any:
        handler = _HANDLER.get()
        if handler is not None:
            return handler(self, inputs)
        return self.infer(**inputs)

    def infer(self, **inputs: Any) -> dict[str, Any]:
        """One request, in this process; returns output name → numpy array."""
        return self.repository.local().infer(self.name, inputs, outputs=self.requested, options=self.options)

    async def infer_async(self, **inputs: Any) -> dict[str, Any]:
        """``infer`` in a thread of its own: an async caller's other calls go on meanwhile (and a called async
        model runs its own event loop there, not inside the caller's)."""
        return await asyncio.to_thread(self.infer, **inputs)

    def stream(self, **inputs: Any) -> Iterator[dict[str, Any]]:
        """Every response of a decoupled model, in order."""
        return self.repository.local().stream(self.name, inputs, outputs=self.requested, options=self.options)

    async def stream_async(self, **inputs: Any) -> AsyncIterator[dict[str, Any]]:
        for response in self.stream(**inputs):
            yield response

    def __repr__(self) -> str:
        return f"<ModelHandle {self.name!r}>"
