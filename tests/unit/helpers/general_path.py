"""A generated ``model.py`` beside the runtime's general ``TritonPythonModel``, on the backend shim: what
test_model_source.py and test_fused_model_source.py compare, request for request, answer for answer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from google.protobuf import json_format

from repogen.emit.model_config import model_config
from repogen.ir.spec import ModelSpec
from repogen.local import backend_shim

pb = backend_shim.install()

from repogen.runtime.triton_model import TritonPythonModel  # noqa: E402  (after the shim it imports)


def load_module(path: Path, name: str) -> ModuleType:
    """The generated ``model.py`` at ``path``, imported as ``name`` (removed with :func:`forget`)."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def forget(name: str) -> None:
    sys.modules.pop(name, None)


def initialize_args(spec: ModelSpec, name: str, directory: Path, kind: str = "CPU") -> dict[str, str]:
    """What tritonserver hands ``initialize`` for instance 0 of ``spec`` in ``directory``, of ``kind`` (CPU, GPU)."""
    return {
        "model_config": json_format.MessageToJson(model_config(spec), preserving_proto_field_name=True),
        "model_name": name, "model_version": "1", "model_repository": str(directory),
        "model_instance_name": f"{name}_0_0", "model_instance_kind": kind, "model_instance_device_id": "0",
    }  # fmt: skip


def answer(response: Any) -> Any:
    if response.has_error():
        return response.error().message()
    return {t.name(): (t.as_numpy().dtype.str, t.as_numpy().tolist()) for t in response.output_tensors()}


def same(models: list[Any], *requests: Any) -> list[Any]:
    """Both models' answers to ``requests``, asserted equal."""
    answers = [[answer(r) for r in model.execute(list(requests))] for model in models]
    assert answers[0] == answers[1]
    return answers[0]


def request(**arrays: Any) -> Any:
    return pb.InferenceRequest([pb.Tensor(name, value) for name, value in arrays.items()])


__all__ = ["TritonPythonModel", "answer", "forget", "initialize_args", "load_module", "pb", "request", "same"]
