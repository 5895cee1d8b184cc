"""``ModelHandle``: what ``bind``, ``@model`` and ``@ensemble`` return.

One object, three meanings depending on where it is called:

* inside an ``@ensemble`` body, with placeholder tensors: it records a step (tracing);
* inside a callable served by Triton: the build pickled it as a BLS client
  (``repogen.runtime.bls.ModelClient``) that sends a ``pb_utils.InferenceRequest``;
* anywhere else: it runs the model in this process through ``Repository.local()``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from ..ir.tracing import SymbolicTensor, current_tracer

if TYPE_CHECKING:
    from .repository import EnsembleDefinition, ModelDefinition, Repository


class ModelHandle:
    """A reference to one model (or ensemble) of a repository."""

    def __init__(
        self,
        repository: Repository,
        definition: ModelDefinition | EnsembleDefinition,
        requested: tuple[str, ...] | None = None,
    ):
        self.repository = repository
        self.definition = definition
        self.requested = requested

    @property
    def name(self) -> str:
        return self.definition.name

    def outputs(self, *names: str) -> ModelHandle:
        """The same model, asking the server for these outputs only (less data over BLS)."""
        return ModelHandle(self.repository, self.definition, tuple(names))

    def __call__(self, **inputs: Any) -> Any:
        if any(isinstance(value, SymbolicTensor) for value in inputs.values()):
            return current_tracer(self).call(self, inputs)
        return self.infer(**inputs)

    def infer(self, **inputs: Any) -> dict[str, Any]:
        """One request, in this process; returns output name → numpy array."""
        return self.repository.local().infer(self.name, inputs, outputs=self.requested)

    async def infer_async(self, **inputs: Any) -> dict[str, Any]:
        return self.infer(**inputs)

    def stream(self, **inputs: Any) -> Iterator[dict[str, Any]]:
        """Every response of a decoupled model, in order."""
        return self.repository.local().stream(self.name, inputs, outputs=self.requested)

    async def stream_async(self, **inputs: Any) -> AsyncIterator[dict[str, Any]]:
        for response in self.stream(**inputs):
            yield response

    def __repr__(self) -> str:
        return f"<ModelHandle {self.name!r}>"
