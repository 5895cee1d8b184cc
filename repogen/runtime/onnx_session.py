"""An exported ONNX network served on the Python backend (``models.onnx(..., backend="python")``).

For a server without Triton's onnxruntime backend (PyPI's tritonserver, minimal images): the build
binds this class as the model's callable and ships onnxruntime inside the repository like any other
package a payload imports, and the graph as ``<version>/model.onnx``, where the onnxruntime backend
would find it. One session per model instance, built in the server with the options the config
asks for (runtime/onnx_options.py).

What the dynamic batcher groups runs as one ``session.run``, as on Triton's onnxruntime backend:
requests whose inputs agree past the batch axis (the graph's leading dim, which the build checks is
symbolic) are stacked along it and the outputs cut back per request; requests of other shapes form
groups of their own. A batch onnxruntime refuses, or whose outputs lose the batch axis, runs again
request by request, so a failing request fails alone and the others are answered.

For most graphs this is the general path only: the generated ``model.py`` (model_onnx.py.tmpl) runs the
common request itself through ``session`` and ``run_options``, which are therefore part of the contract
with files already built, and calls the runtime's ``execute`` (and so this class) for the rest.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .contract import GRAPH_FILE
from .onnx_options import session_options
from .request import StepFailure

# numpy >= 1.25: concatenate's C implementation, without the __array_function__ dispatch in front of it
_concatenate = getattr(np.concatenate, "_implementation", np.concatenate)

_decode = np.frompyfunc(lambda item: item.decode("utf-8") if isinstance(item, bytes) else item, 1, 1)
_encode = np.frompyfunc(lambda item: item.encode("utf-8") if isinstance(item, str) else item, 1, 1)


def log_cpu_fallback(onnxruntime: Any, context: Any) -> None:
    """A KIND_GPU instance whose shipped onnxruntime has no CUDA provider runs on the CPU: said once, in the log."""
    from .failures import log  # the server's log: imported only inside the server

    found = ", ".join(onnxruntime.get_available_providers())
    log(
        "log_warn",
        f"model '{context.model_name}' instance on GPU {context.device_id} runs its graph on the CPU: the onnxruntime "
        f"{onnxruntime.__version__} it ships has no CUDAExecutionProvider (it has {found}). Build where "
        "onnxruntime-gpu is installed, built for the target container's CUDA major (12 up to NGC 25.07, 13 from "
        "25.08), so that the build ships it",
    )


class OnnxSession:
    """The model's callable: an onnxruntime session on the version's ``model.onnx``."""

    def __init__(self, context: Any):
        import onnxruntime  # shipped in the version's packages: imported only by models that run a graph

        config = context.model_config
        options, self.run_options, self.intra_op_threads = session_options(onnxruntime, config.raw, config.model_name)
        providers: list[Any] = ["CPUExecutionProvider"]
        if context.instance_kind.upper().endswith("GPU"):
            if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
                providers.insert(0, ("CUDAExecutionProvider", {"device_id": context.device_id}))
            else:
                log_cpu_fallback(onnxruntime, context)
        path = os.path.join(context.model_dir, GRAPH_FILE)
        self.session = onnxruntime.InferenceSession(path, sess_options=options, providers=providers)
        self.outputs = [tensor.name for tensor in config.outputs]
        self.batching = config.max_batch_size > 0
        self.strings = any(t.dtype.hasobject for t in (*config.inputs, *config.outputs))  # BYTES: str <-> bytes

    def __call__(self, requests: list[Any]) -> list[Any]:
        """One result per request: its outputs, or a ``StepFailure`` that fails that request alone.

        Written for the interpreter of the server's Python (3.10): loops rather than comprehensions and
        generators, each of which costs a frame there, on the path every batch takes.
        """
        if len(requests) == 1 or not self.batching:
            return [self._alone(request) for request in requests]
        names = requests[0].keys()
        for request in requests:
            if request.keys() != names:  # an optional input left out by some
                return self._grouped(requests)
        feed = {}
        try:  # the common batch: every request of one shape past the batch axis
            for name in names:
                feed[name] = _concatenate([request[name] for request in requests])
        except ValueError:  # other dims differ
            return self._grouped(requests)
        return self._together(requests, feed) if feed else [self._alone(request) for request in requests]

    def run(self, request: Any) -> dict[str, np.ndarray]:
        """One request as it came: onnxruntime takes strings as ``str``; Triton sends and returns BYTES as ``bytes``."""
        return dict(zip(self.outputs, self._run(request), strict=True))

    def _alone(self, request: Any) -> Any:
        try:
            return self.run(request)
        except Exception as exc:  # this request's answer, and only this one's
            return StepFailure(exc)

    def _grouped(self, requests: list[Any]) -> list[Any]:
        """Requests grouped by their inputs' names and shapes past the batch axis, each group run together."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for index, request in enumerate(requests):
            key = tuple(sorted((name, value.shape[1:]) for name, value in request.items()))
            groups.setdefault(key, []).append(index)
        results: list[Any] = [None] * len(requests)
        for members in groups.values():
            group = [requests[i] for i in members]
            if len(group) == 1 or not group[0]:
                answers = [self._alone(request) for request in group]
            else:
                answers = self._together(group, {name: _concatenate([r[name] for r in group]) for name in group[0]})
            for i, answer in zip(members, answers, strict=True):
                results[i] = answer
        return results

    def _together(self, requests: list[Any], feed: dict[str, np.ndarray]) -> list[Any]:
        """``feed``, the requests stacked, as one run, each request answered with its own rows; if onnxruntime
        refuses it, or an output loses the batch axis, each request runs on its own."""
        first = next(iter(feed))
        total = feed[first].shape[0]
        try:
            values = self._run(feed)
        except Exception:  # which request onnxruntime refuses: each on its own
            return [self._alone(request) for request in requests]
        for value in values:
            if value.ndim == 0 or value.shape[0] != total:  # an output without the batch axis
                return [self._alone(request) for request in requests]
        results: list[Any] = []
        answer = results.append
        start = 0
        if len(values) == 1:
            (name,), (value,) = self.outputs, values
            for request in requests:
                end = start + request[first].shape[0]
                answer({name: value[start:end]})
                start = end
            return results
        pairs = list(zip(self.outputs, values, strict=True))
        for request in requests:
            end = start + request[first].shape[0]
            answer({name: value[start:end] for name, value in pairs})
            start = end
        return results

    def _run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        if not self.strings:
            return self.session.run(self.outputs, feed, self.run_options)  # type: ignore[no-any-return]
        feed = {name: _decode(value).astype(object) if value.dtype.hasobject else value for name, value in feed.items()}
        values = self.session.run(self.outputs, feed, self.run_options)
        return [_encode(value).astype(object) if value.dtype.hasobject else value for value in values]
