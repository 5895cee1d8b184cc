"""Running a repository's models, ensembles and BLS pipelines in this process, without a server.

``models.local().infer("Pipeline", {"text": ...})`` lowers the repository exactly as a build
would (same validation), then drives the runtime's own ``TritonPythonModel`` through a stand-in
for ``triton_python_backend_utils``: the request checks Triton makes, the callable contract,
decorators, output conversion, errors and streaming behave as in the server. Handles called
inside a callable run here too, so a BLS pipeline is a plain function call. Milliseconds per
request, which makes pipelines unit-testable.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf import json_format

from ..emit.model_config import model_config
from ..ir import EnsembleSpec, ModelSpec, RepositorySpec, VersionSpec, lower
from ..pickling.cuda_scan import cuda_callables
from ..runtime.call_errors import ModelCallError, answered_code
from ..runtime.call_options import CallOptions
from ..runtime.errors import InferenceError
from . import backend_shim
from .sequences import control_inputs
from .validation import check_batch, prepare_inputs

if TYPE_CHECKING:
    from ..dsl.repository import Repository

__all__ = ["LocalRepository"]


class LocalRepository:
    """One in-process "server" for a repository; models are set up on first use."""

    def __init__(self, repository: Repository):
        backend_shim.install()
        from ..runtime import triton_model  # after the shim: it imports triton_python_backend_utils

        self._model_class = triton_model.TritonPythonModel
        self.spec: RepositorySpec = lower(repository, cuda_scan=cuda_callables)
        self._instances: dict[str, Any] = {}
        self._serving: dict[int, threading.Lock] = {}  # id(instance) -> held while it executes
        self._lock = threading.RLock()
        self._dir = Path(tempfile.mkdtemp(prefix="repogen-local-"))
        weakref.finalize(self, shutil.rmtree, self._dir, True)

    # -- public ----------------------------------------------------------------------------------

    def infer(
        self,
        model: str,
        inputs: dict[str, Any],
        outputs: tuple[str, ...] | list[str] | None = None,
        parameters: dict[str, Any] | None = None,
        options: CallOptions | None = None,
    ) -> dict[str, np.ndarray]:
        """One request; returns output name → array, or raises ``ModelCallError`` like a client would. ``options``
        (a handle's): its version, parameters and sequence apply; a call in process runs to its end (no timeout)."""
        if model in self.spec.names and any(e.name == model for e in self.spec.ensembles):
            return self._ensemble(self.spec.ensemble(model), inputs, outputs)
        spec = self._model_spec(model)
        if spec.decoupled:
            raise InferenceError(f"model '{model}' is decoupled (streaming); iterate stream(...) instead")
        instance, request = self._request(spec, inputs, parameters, outputs, options)
        with self._serving[id(instance)]:  # one call at a time per instance, as one Triton instance serves them here
            (response,) = instance.execute([request])
        return _outputs(model, response, outputs)

    def stream(
        self,
        model: str,
        inputs: dict[str, Any],
        outputs: tuple[str, ...] | list[str] | None = None,
        parameters: dict[str, Any] | None = None,
        options: CallOptions | None = None,
    ) -> Iterator[dict[str, np.ndarray]]:
        """Each response of a decoupled model as the model sends it; the empty final one is skipped."""
        spec = self._model_spec(model)
        instance, request = self._request(spec, inputs, parameters, outputs, options)
        if not spec.decoupled:
            (response,) = instance.execute([request])
            yield _outputs(model, response, outputs)
            return
        worker = threading.Thread(target=instance.execute, args=([request],), daemon=True)
        worker.start()
        ended = False
        try:
            while not ended:
                response, flags = request.sender.queue.get()
                ended = bool(flags & backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                if response is not None:
                    result = _outputs(model, response, outputs)
                    if result:
                        yield result
        finally:  # a reader that stops early cancels the request, as a cancelled gRPC stream does
            request.cancelled = not ended
            while not ended:
                ended = bool(request.sender.queue.get()[1] & backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            worker.join()

    def is_ready(self, model: str) -> bool:
        """What ``/v2/models/<model>/ready`` answers on a server that asks models (NGC 26.03+): the model is
        set up (constructed, as a load would) and its class's ``is_ready()`` asked; True when it has none.
        An ensemble is ready when every step is."""
        if any(e.name == model for e in self.spec.ensembles):
            return all(self.is_ready(step.model) for step in self.spec.ensemble(model).steps)
        readiness = self._instance(self._model_spec(model)).readiness
        return True if readiness is None else readiness.check()

    # -- models ----------------------------------------------------------------------------------

    def _model_spec(self, model: str) -> ModelSpec:
        try:
            return self.spec.model(model)
        except KeyError:
            raise InferenceError(f"no model '{model}' in this repository; it has {list(self.spec.names)}") from None

    def _request(
        self,
        spec: ModelSpec,
        inputs: dict[str, Any],
        parameters: dict[str, Any] | None,
        outputs: tuple[str, ...] | list[str] | None = None,
        options: CallOptions | None = None,
    ) -> tuple[Any, backend_shim.InferenceRequest]:
        options = options or CallOptions()
        arrays = prepare_inputs(spec.name, spec.inputs, spec.max_batch_size, inputs)
        check_batch(spec.name, arrays, spec.max_batch_size)
        arrays.update(control_inputs(spec, options.sequence))
        if options.parameters:
            parameters = {**options.parameters, **(parameters or {})}
        # as in the server, whose stub gives each model its own copy of every input
        tensors = [backend_shim.Tensor(name, np.array(array)) for name, array in arrays.items()]
        unknown = sorted(set(outputs or ()) - {t.name for t in spec.outputs})
        if unknown:
            raise InferenceError(
                f"model '{spec.name}' has no output(s) {unknown}; it has {[t.name for t in spec.outputs]}"
            )
        requested = list(outputs) if outputs else [t.name for t in spec.outputs]  # none named: all, as Triton does
        return self._instance(spec, options.version), backend_shim.InferenceRequest(tensors, parameters, requested)

    def _instance(self, spec: ModelSpec, number: int = -1) -> Any:
        """The instance serving version ``number`` of ``spec`` (-1: its latest)."""
        version = spec.versions[-1] if number == -1 else next((v for v in spec.versions if v.version == number), None)
        if version is None:
            raise InferenceError(
                f"model '{spec.name}' has no version {number}; it has {[v.version for v in spec.versions]}"
            )
        key = spec.name if number == -1 or version is spec.versions[-1] else f"{spec.name}/{number}"
        with self._lock:
            if key not in self._instances:
                model_dir = self._dir / spec.name
                self._ship_files(spec, version, model_dir / str(version.version))
                args = {
                    "model_config": json_format.MessageToJson(model_config(spec), preserving_proto_field_name=True),
                    "model_instance_kind": "CPU",
                    "model_instance_name": f"{spec.instance_groups[0].name}_0",
                    "model_instance_device_id": "0",
                    "model_repository": str(model_dir),
                    "model_version": str(version.version),
                    "model_name": spec.name,
                }
                instance = self._model_class()
                instance.configure(args, list(version.infer_funcs), spec.strict, spec.placement.tensors)
                self._instances[key] = instance
                self._serving[id(instance)] = threading.Lock()
            return self._instances[key]

    @staticmethod
    def _ship_files(spec: ModelSpec, version: VersionSpec, version_dir: Path) -> None:
        """The model's files under ``files/``, and a graph its callable opens (``model.onnx``) beside them."""
        files = version_dir / "files"
        files.mkdir(parents=True, exist_ok=True)
        for name, source in spec.files:
            os.symlink(source, files / name)
        for name, source in version.files:
            os.symlink(source, version_dir / name)

    # -- ensembles -------------------------------------------------------------------------------

    def _ensemble(
        self, spec: EnsembleSpec, inputs: dict[str, Any], outputs: tuple[str, ...] | list[str] | None
    ) -> dict[str, np.ndarray]:
        """The steps in recorded order (a topological one), tensors flowing by ensemble name."""
        tensors: dict[str, Any] = dict(prepare_inputs(spec.name, spec.inputs, spec.max_batch_size, inputs))
        for step in spec.steps:
            step_inputs = {model_input: tensors[name] for model_input, name in step.input_map}
            wanted = [model_output for model_output, _ in step.output_map]
            produced = self.infer(step.model, step_inputs, outputs=wanted)
            for model_output, name in step.output_map:
                tensors[name] = produced[model_output]
        names = outputs or [t.name for t in spec.outputs]
        return {name: tensors[name] for name in names}


def _outputs(model: str, response: Any, wanted: tuple[str, ...] | list[str] | None) -> dict[str, np.ndarray]:
    if response.has_error():
        error = response.error()
        code = answered_code(backend_shim, error)
        raise ModelCallError(f"model '{model}' failed: {error.message()}", code=code, model=model)
    return {t.name(): t.as_numpy() for t in response.output_tensors() if not wanted or t.name() in wanted}
