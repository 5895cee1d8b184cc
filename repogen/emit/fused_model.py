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
from ..runtime.contract import NUMPY, STEPS_DIR, Metadata
from .fused_model_source import fused_model_py
from .model_config import model_config
from .model_files import model_files, shipped, version_files
from .payloads import PayloadPlan, PayloadUnit


def fused_unit(fused: FusedSpec) -> PayloadUnit:
    """What the fused model pickles: every step's callables, config and tensor maps, as the runtime runs them."""
    steps: list[dict[str, Any]] = []
    callables: list[tuple[str, Any]] = []
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
        imports += [module for module in latest.imports if module not in imports]
    what = f"ensemble '{fused.name}' (fuse=True)"
    version = fused.model.versions[0].version
    return PayloadUnit(fused.name, version, what, {"fused": steps}, tuple(callables), _clients(fused), tuple(imports))


def emit_fused(fused: FusedSpec, plan: PayloadPlan) -> dict[str, Entry]:
    """The fused model's config and version directory, with the payload ``plan`` pickled and the steps' files."""
    model = fused.model
    version = model.versions[0]
    files = model_files(model)
    for spec in fused.step_models:
        latest = spec.versions[-1]
        step_dir = f"{model.name}/{version.version}/{STEPS_DIR}/{spec.name}/{latest.version}"
        for name, source in spec.files:
            files.update(shipped(f"{step_dir}/files/{name}", source))
        for name, source in latest.files:
            files.update(shipped(f"{step_dir}/{name}", source))
    record = {
        Metadata.CALLS: sorted({c.model for c in _clients(fused)}),
        Metadata.FUSED: [spec.name for spec in fused.step_models],
    }
    files.update(version_files(model, version, plan, record, fused_model_py(fused)))
    files.update(plan.place(model.name, version.version))
    return files


def _clients(fused: FusedSpec) -> tuple[ClientSpec, ...]:
    """The BLS clients every step's callables hold."""
    return tuple(client for spec in fused.step_models for client in spec.versions[-1].clients)
