"""BLS: a model handle, once pickled into a served callable, becomes this client.

Calling it sends a ``pb_utils.InferenceRequest`` to another model of the same server and returns
its outputs as numpy arrays (tensors on a GPU stay there, as DLPack-capable objects).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np

from . import streams
from .conversion import NUMPY_DTYPES, to_bytes_array
from .errors import InferenceError, ModelCallError


def _backend() -> Any:
    import triton_python_backend_utils as pb_utils  # exists only inside the server

    return pb_utils


class ModelClient:
    """Calls one model of the server from inside another model's callable."""

    def __init__(
        self,
        model: str,
        inputs: dict[str, str],
        outputs: tuple[str, ...],
        decoupled: bool = False,
        requested: tuple[str, ...] | None = None,
    ):
        self.model = model
        self.input_types = inputs  # input name -> Triton data type, for casting what callers pass
        self.output_names = outputs
        self.decoupled = decoupled
        self.requested = requested
        if decoupled:
            streams.consumer()

    @property
    def name(self) -> str:
        return self.model

    def outputs(self, *names: str) -> ModelClient:
        """The same model, asking for these outputs only."""
        unknown = sorted(set(names) - set(self.output_names))
        if unknown:
            raise InferenceError(f"model '{self.model}' has no output(s) {unknown}; it has {list(self.output_names)}")
        return ModelClient(self.model, self.input_types, self.output_names, self.decoupled, tuple(names))

    def __call__(self, **inputs: Any) -> dict[str, Any]:
        return self.infer(**inputs)

    def infer(self, **inputs: Any) -> dict[str, Any]:
        if self.decoupled:
            raise InferenceError(f"model '{self.model}' is decoupled (streaming); iterate handle.stream(...) instead")
        return self._outputs(self._request(inputs).exec())

    async def infer_async(self, **inputs: Any) -> dict[str, Any]:
        """Awaitable call: several can run concurrently inside an ``async def`` callable."""
        if self.decoupled:
            raise InferenceError(f"model '{self.model}' is decoupled (streaming); use handle.stream_async(...)")
        return self._outputs(await self._request(inputs).async_exec())

    def stream(self, **inputs: Any) -> Iterator[dict[str, Any]]:
        """Each response of a decoupled model as it arrives; the empty final response is skipped.

        The response iterator is drained to its end even when the caller stops early, then retired
        (``streams.retire``), never simply dropped: dropped, it can kill the stub (issue 23).
        """
        responses = self._request(inputs).exec(decoupled=True)
        try:
            for response in responses:
                outputs = self._outputs(response)
                if outputs:
                    yield outputs
        finally:
            _finish(responses)

    async def stream_async(self, **inputs: Any) -> AsyncIterator[dict[str, Any]]:
        responses = await self._request(inputs).async_exec(decoupled=True)
        try:
            for response in responses:
                outputs = self._outputs(response)
                if outputs:
                    yield outputs
        finally:
            _finish(responses)

    def _request(self, inputs: dict[str, Any]) -> Any:
        pb_utils = _backend()
        unknown = sorted(set(inputs) - set(self.input_types))
        if unknown:
            raise InferenceError(
                f"model '{self.model}' has no input(s) {unknown}; its inputs are {sorted(self.input_types)}"
            )
        tensors = [self._tensor(pb_utils, name, value) for name, value in inputs.items()]
        return pb_utils.InferenceRequest(
            model_name=self.model,
            inputs=tensors,
            requested_output_names=list(self.requested or self.output_names),
        )

    def _tensor(self, pb_utils: Any, name: str, value: Any) -> Any:
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
            return pb_utils.Tensor.from_dlpack(name, value)  # e.g. a torch tensor: stays on its device
        data_type = self.input_types[name]
        array = np.asarray(value)
        if data_type == "TYPE_STRING":
            array = to_bytes_array(array)
        elif array.dtype != NUMPY_DTYPES[data_type]:
            array = array.astype(NUMPY_DTYPES[data_type])
        return pb_utils.Tensor(name, np.ascontiguousarray(array))

    def _outputs(self, response: Any) -> dict[str, Any]:
        if response.has_error():
            raise ModelCallError(f"model '{self.model}' failed: {response.error().message()}")
        return {t.name(): (t.as_numpy() if t.is_cpu() else t) for t in response.output_tensors()}

    def __repr__(self) -> str:
        return f"<ModelClient {self.model!r}>"


def _finish(responses: Any) -> None:
    """Read what is left of a stream (its last response makes the stub clean it up), then retire it.

    Left unfinished, the stub would keep the iterator (and every response still to come) for the
    rest of its life; dropped at once, it may be destroyed in a thread without the GIL.
    """
    try:
        while True:  # next(), not a for loop: iter() of a finished stream starts it over
            next(responses)
    except StopIteration:
        pass
    finally:
        streams.retire(responses)
