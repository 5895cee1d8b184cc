"""A fused ensemble → one Python model whose payload holds every step's callables and config.

Each step travels as the server would configure it when served alone: its callables, its
config (as the JSON Triton hands ``initialize``), its strictness, the tensors it maps, and the files
it ships (under ``steps/<model>/<version>/files/``; a graph its callable opens, ``model.onnx``, in
``steps/<model>/<version>/``), so the runtime can run it in-process with the same conversion and checks.
The packages a step imports only when it runs (onnxruntime) ship with the fused model.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from ..hashing import Entry
from ..ir.spec import ClientSpec, FusedSpec
from ..runtime.fused import STEPS_DIR  # <fused>/<version>/steps/<model>/<version>/files/...
from ..runtime.records import Metadata
from ..runtime.tensors import NUMPY
from .files import model_files, shipped, version_files
from .fused_model_source import fused_model_py
from .model_config import model_config
from .payloads import Payloads, pickle_payload


def emit_fused(fused: FusedSpec, payloads: Payloads) -> dict[str, Entry]:
    model = fused.model
    version = model.versions[0]
    files = model_files(model)
    steps: list[dict[str, Any]] = []
    callables: list[tuple[str, Any]] = []
    clients: list[ClientSpec] = []
    imports: list[str] = []
    for step, spec in zip(fused.steps, fused.step_models, strict=True):
        latest = spec.versions[-1]
        steps.append(
            {
                "model": spec.name,
                "version": latest.version,
                "config": json_format.MessageToJson(model_config(spec), preserving_proto_field_name=True),
                "strict": spec.strict,
                "infer_funcs": list(latest.infer_funcs),
                "input_map": dict(step.input_map),
                "output_map": dict(step.output_map),
            }
        )
        if spec.placement.tensors != NUMPY:  # only where it is not numpy: the payloads of others stay as they were
            steps[-1]["tensors"] = spec.placement.tensors
        callables += [(f"step '{spec.name}' infer_func", func) for func in latest.infer_funcs]
        clients += latest.clients
        imports += [module for module in latest.imports if module not in imports]
        step_dir = f"{model.name}/{version.version}/{STEPS_DIR}/{spec.name}/{latest.version}"
        for name, source in spec.files:
            files.update(shipped(f"{step_dir}/files/{name}", source))
        for name, source in latest.files:
            files.update(shipped(f"{step_dir}/{name}", source))
    what = f"ensemble '{model.name}' (fuse=True)"
    payload = pickle_payload(what, {"fused": steps}, callables, clients, payloads, imports)
    record = {
        Metadata.CALLS: sorted({c.model for c in clients}),
        Metadata.FUSED: [spec.name for spec in fused.step_models],
    }
    files.update(version_files(model, version, payload, record, fused_model_py(fused)))
    files.update(payloads.place(f"{model.name}/{version.version}", payload))
    return files
