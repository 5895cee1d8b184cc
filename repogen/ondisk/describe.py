"""``repogen inspect``: what a repository serves, as plain data (then text, JSON or Mermaid).

``describe_repository`` returns JSON-ready dicts with sorted keys and models sorted by name, so
``--json`` output is byte-stable and can itself be golden-tested or diffed in review.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ..errors import RepositoryError
from ..runtime.contract import CONFIG_FILE, SBOM_FILE, Manifest
from ..triton.proto import model_config_pb2 as mc
from ..triton.server_options import ServerSettings, server_options
from .compatibility import serves
from .reader import ModelDir, model_dirs, read_manifest


def _tensor(tensor: mc.ModelInput | mc.ModelOutput) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": tensor.name,
        "data_type": mc.DataType.Name(tensor.data_type),
        "dims": list(tensor.dims),
    }
    if isinstance(tensor, mc.ModelInput) and tensor.optional:
        described["optional"] = True
    if tensor.HasField("reshape"):
        described["reshape"] = list(tensor.reshape.shape)
    return described


def _value(descriptor: FieldDescriptor, value: Any) -> Any:
    if descriptor.message_type is not None:
        return plain(value)
    if descriptor.enum_type is not None:
        known = descriptor.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    return value


def plain(message: Message) -> dict[str, Any]:
    """Set fields as JSON-ready values: proto field names, enums by name (an unknown number as is), maps
    as sorted dicts, and (unlike protobuf's JSON mapping, which quotes 64-bit integers) numbers as numbers."""
    described: dict[str, Any] = {}
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            value_field = descriptor.message_type.fields_by_name["value"]
            described[descriptor.name] = {k: _value(value_field, v) for k, v in sorted(value.items())}
        elif descriptor.is_repeated:
            described[descriptor.name] = [_value(descriptor, v) for v in value]
        else:
            described[descriptor.name] = _value(descriptor, value)
    return described


def _batching(config: mc.ModelConfig) -> dict[str, Any]:
    choice = config.WhichOneof("scheduling_choice")
    if choice == "dynamic_batching":
        return {"kind": "dynamic", **plain(config.dynamic_batching)}
    if choice == "sequence_batching":
        return {"kind": "sequence", **plain(config.sequence_batching)}
    if choice == "ensemble_scheduling":
        return {"kind": "ensemble"}
    return {"kind": "none"}


def _instance_groups(config: mc.ModelConfig) -> list[dict[str, Any]]:
    groups = []
    for group in config.instance_group:
        described: dict[str, Any] = {
            "count": group.count or 1,  # tritonserver's default
            "kind": mc.ModelInstanceGroup.Kind.Name(group.kind),
        }
        if group.name:
            described["name"] = group.name
        if group.gpus:
            described["gpus"] = list(group.gpus)
        groups.append(described)
    return groups


def _steps(config: mc.ModelConfig) -> list[dict[str, Any]]:
    return [
        {
            "model_name": step.model_name,
            "model_version": step.model_version,
            "input_map": dict(sorted(step.input_map.items())),
            "output_map": dict(sorted(step.output_map.items())),
        }
        for step in config.ensemble_scheduling.step
    ]


def bls_calls(model: ModelDir, version: int) -> list[str]:
    """Hook for BLS edges: the models a version calls, from its ``model.json`` sidecar.

    The emitter does not record BLS calls yet; when it does, it is expected to write
    ``"calls": ["OtherModel", ...]`` into model.json, and ``--mermaid`` draws them as dotted edges.
    """
    try:
        calls = model.metadata(version).get("calls", [])
    except RepositoryError:
        return []
    return sorted({str(c) for c in calls}) if isinstance(calls, list) else []


MADE_ANEW = "made_anew"  # model.json's live objects made anew in the server, as ``emit.payloads`` writes them


def made_anew(model: ModelDir, version: int) -> list[dict[str, str]]:
    """The live objects (locks, empty queues, idle executors) the server makes anew, with the chain holding each."""
    try:
        entries = model.metadata(version).get(MADE_ANEW) or []
    except RepositoryError:
        return []
    return [{"object": str(e.get("object")), "at": str(e.get("at"))} for e in entries if isinstance(e, dict)]


MADE_ON_GPU = "made_on_gpu"  # model.json's callables made on a GPU at bind time, as ``emit.model_files`` writes them


def made_on_gpu(model: ModelDir, version: int) -> list[dict[str, Any]]:
    """The callables that held CUDA tensors at build time, and where the build put their instances."""
    try:
        entries = model.metadata(version).get(MADE_ON_GPU) or []
    except RepositoryError:
        return []
    return [
        {"callable": str(e.get("callable")), "at": str(e.get("at")), "devices": list(e.get("devices") or []),
         "runs": str(e.get("runs"))}
        for e in entries
        if isinstance(e, dict)
    ]  # fmt: skip


def describe_model(model: ModelDir) -> dict[str, Any]:
    described: dict[str, Any] = {"name": model.name, "versions": list(model.versions)}
    if model.config is None:
        described["error"] = model.error.message if model.error else f"no {CONFIG_FILE}"
        return described
    config = model.config
    described.update(
        {
            "platform": config.platform,
            "backend": config.backend,
            "max_batch_size": config.max_batch_size,
            "batching": _batching(config),
            "inputs": [_tensor(t) for t in config.input],
            "outputs": [_tensor(t) for t in config.output],
            "instance_groups": _instance_groups(config),
            "decoupled": config.model_transaction_policy.decoupled,
        }
    )
    if model.is_ensemble:
        described["steps"] = _steps(config)
    calls = sorted({c for v in model.versions for c in bls_calls(model, v)})
    if calls:
        described["bls_calls"] = calls
    shipped = {str(v): shipped_packages(model, v) for v in model.versions}
    packages = {version: trees for version, trees in shipped.items() if trees}
    if packages:
        described["packages"] = packages
    made = {str(v): made_anew(model, v) for v in model.versions}
    if any(made.values()):
        described[MADE_ANEW] = {version: entries for version, entries in made.items() if entries}
    on_gpu = {str(v): made_on_gpu(model, v) for v in model.versions}
    if any(on_gpu.values()):
        described[MADE_ON_GPU] = {version: entries for version, entries in on_gpu.items() if entries}
    return described


def shipped_packages(model: ModelDir, version: int) -> dict[str, Any]:
    """Per tree (``cp310-x86_64``): its size, file count and lock, from the version's ``model.json``."""
    try:
        trees = model.metadata(version).get("packages") or {}
    except RepositoryError:
        return {}
    return {
        tag: {"size": entry.get("size", 0), "files": entry.get("files", 0), "lock": entry.get("lock", [])}
        for tag, entry in sorted(trees.items())
        if isinstance(entry, dict)
    }


def describe_repository(repository: str | Path) -> dict[str, Any]:
    """Independent of where the repository lives, so the JSON of two checkouts compares equal."""
    manifest = read_manifest(Path(repository)) or {}
    where = serves(manifest)
    dirs = model_dirs(Path(repository))
    settings = ServerSettings.from_record((manifest.get(Manifest.SERVER) or {}).get("settings"))
    options = server_options({m.name: m.config for m in dirs if m.config is not None}, settings)
    return {
        "models": [describe_model(m) for m in dirs],
        **({"serves": where} if where else {}),
        **({"server_options": [o.record() for o in options]} if options else {}),
    }


SERVER_OPTIONS_HEADING = (
    "tritonserver options the models depend on (repogen serve and the files repogen deploy writes pass them; "
    "start any other tritonserver with them):"
)


def to_json(description: dict[str, Any]) -> str:
    return json.dumps(description, indent=2, sort_keys=True)


def _shape(tensor: dict[str, Any], max_batch_size: int) -> str:
    dims = [str(d) for d in tensor["dims"]]
    if max_batch_size:
        dims.insert(0, f"batch≤{max_batch_size}")
    suffix = " (optional)" if tensor.get("optional") else ""
    return f"{tensor['data_type'].removeprefix('TYPE_')} [{', '.join(dims)}]{suffix}"


def to_text(description: dict[str, Any]) -> str:
    """A human summary: one block per model."""
    lines: list[str] = [f"Serves {description['serves']}", ""] if description.get("serves") else []
    if description.get("server_options"):
        lines += [SERVER_OPTIONS_HEADING]
        for option in description["server_options"]:
            lines.append(f"  {option['flag']}={option['value']}  ({', '.join(option['models'])}: {option['why']})")
        lines.append("")
    for model in description["models"]:
        versions = ", ".join(map(str, model["versions"])) or "none"
        if "error" in model:
            lines += [f"{model['name']}  (versions: {versions})", f"  cannot read: {model['error']}", ""]
            continue
        kind = f"platform {model['platform']}" if model["platform"] else f"backend {model['backend'] or '?'}"
        lines.append(f"{model['name']}  ({kind}; versions: {versions})")
        batching = model["batching"]
        settings = ", ".join(f"{k}: {v}" for k, v in sorted(batching.items()) if k != "kind")
        lines.append(
            f"  max_batch_size: {model['max_batch_size']}; batching: {batching['kind']}"
            + (f" ({settings})" if settings else "")
            + ("; decoupled" if model["decoupled"] else "")
        )
        if model["instance_groups"]:
            groups = ", ".join(
                f"{g['count']} x {g['kind']}" + (f" gpus {g['gpus']}" if "gpus" in g else "")
                for g in model["instance_groups"]
            )
            lines.append(f"  instances: {groups}")
        for heading in ("inputs", "outputs"):
            lines.append(f"  {heading}:")
            for tensor in model[heading]:
                lines.append(f"    {tensor['name']}: {_shape(tensor, model['max_batch_size'])}")
        for index, step in enumerate(model.get("steps", []), start=1):
            lines.append(f"  step {index}: {step['model_name']} {mapping_label(step)}")
        if model.get("bls_calls"):
            lines.append(f"  calls (BLS): {', '.join(model['bls_calls'])}")
        for version, trees in model.get("packages", {}).items():
            for tag, tree in trees.items():
                pins = ", ".join(f"{p['name']}=={p['version']}" for p in tree["lock"])
                lines.append(
                    f"  packages (v{version}, {tag}): {tree['size'] / 1e6:.1f} MB, {tree['files']} files: {pins}"
                )
        for version, entries in model.get(MADE_ANEW, {}).items():
            lines += [f"  made anew in the server (v{version}): {e['object']} at {e['at']}" for e in entries]
        for version, entries in model.get(MADE_ON_GPU, {}).items():
            lines += [f"  made on a GPU at bind time (v{version}): {_made_on_gpu_line(e)}" for e in entries]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n" if lines else "(no models)\n"


def _made_on_gpu_line(entry: dict[str, Any]) -> str:
    if not entry["devices"]:
        return f"{entry['callable']} {entry['runs']}"
    made = " and ".join(f"cuda:{index}" for index in entry["devices"])
    return f"{entry['callable']} holds CUDA tensors (made on {made}, at {entry['at']}): {entry['runs']}"


def mapping_label(step: dict[str, Any]) -> str:
    """``in: ens→model, ...; out: model→ens``, the direction tensors flow."""
    inputs = ", ".join(f"{ens}→{name}" for name, ens in step["input_map"].items())
    outputs = ", ".join(f"{name}→{ens}" for name, ens in step["output_map"].items())
    return f"in: {inputs or '-'}; out: {outputs or '-'}"


def read_sbom(repository: str | Path) -> tuple[bytes, bool]:
    """The repository's ``sbom.cdx.json``, and whether it was there: one built before repogen wrote SBOMs gets
    one made now from its records (model.json, configs, files), as a build would have written it."""
    from .. import sbom
    from ..hashing import sha256_file
    from ..runtime.contract import CONFIG_FILE, METADATA_FILE
    from .reader import files, require_directory

    root = require_directory(repository)
    if (root / SBOM_FILE).is_file():
        return (root / SBOM_FILE).read_bytes(), True
    found = files(root)
    records = {p: f.read_bytes() for p, f in found.items() if p.endswith((f"/{METADATA_FILE}", f"/{CONFIG_FILE}"))}
    return sbom.document(records, {p: sha256_file(f) for p, f in found.items()}), False
