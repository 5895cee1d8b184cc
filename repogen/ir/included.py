"""Lowering ``models.include``: an existing Triton model directory, taken in as it is.

Its ``config.pbtxt`` is parsed with repogen's r24.10 schema, as strictly as tritonserver parses it,
so a field the server would not know fails the build here, named, instead of the whole model failing
at load with "failed to read text proto". Its tensors, as the config declares them, are the model's
interface for ensembles and BLS. Which fields the targeted releases know is checked where the build's
targets are known (``repogen.emit.included``).
"""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf import text_format

from ..dsl.repository import IncludedDefinition
from ..errors import BuildError
from ..runtime.contract import CONFIG_FILE, is_version_name
from ..triton import fields
from ..triton.proto import model_config_pb2 as mc
from .spec import IncludedSpec, IOSpec


def lower_included(definition: IncludedDefinition) -> IncludedSpec:
    name, root = definition.name, definition.path
    where = f"model '{name}' (included from {root})"
    config_path = root / CONFIG_FILE
    if not config_path.is_file():
        raise BuildError(
            f"{where}: no {CONFIG_FILE} there; include a Triton model directory (<dir>/{CONFIG_FILE} and <dir>/1/...), "
            "paths being relative to the declaring module"
        )
    config = _parse(where, config_path)
    if config.name and config.name != name:
        raise BuildError(
            f"{where}: its {CONFIG_FILE} names the model {config.name!r}, but it is included as {name!r}; tritonserver "
            f"requires a model's name to be its directory's: include it as {config.name!r}, or change the name there"
        )
    files = _files(root)
    if not _version_dirs(root):
        raise BuildError(f"{where}: has no numeric version directory (e.g. {root}/1/); tritonserver loads none")
    return IncludedSpec(
        name=name,
        source=root,
        files=files,
        inputs=tuple(_tensor(t) for t in config.input),
        outputs=tuple(_tensor(t) for t in config.output),
        max_batch_size=config.max_batch_size,
        decoupled=config.model_transaction_policy.decoupled,
        fields=tuple(sorted(set(fields.set_fields(config)))),
        runs_on=config.backend or config.platform or "(no backend named)",
    )


def _parse(where: str, path: Path) -> mc.ModelConfig:
    config = mc.ModelConfig()
    try:
        text_format.Parse(path.read_text(encoding="utf-8"), config)
    except UnicodeDecodeError as exc:
        raise BuildError(f"{where}: {CONFIG_FILE} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except text_format.ParseError as exc:
        unknown = fields.unknown_field(str(exc))
        message = str(exc).replace("repogen.inference.", "inference.")
        if unknown is None:
            raise BuildError(f"{where}: {CONFIG_FILE} does not parse as a Triton ModelConfig (r{fields.SCHEMA_RELEASE} "
                             f"schema): {message}") from None  # fmt: skip
        field, full = unknown[0], fields.triton_name(unknown[1])
        raise BuildError(
            f"{where}: {CONFIG_FILE} sets {field!r} ({full}), which is not in Triton's ModelConfig schema up to "
            f"r{fields.SCHEMA_RELEASE}, the newest repogen knows (check the spelling); a tritonserver that does not "
            "know it refuses the whole model. Remove it from the included config"
        ) from None
    return config


def _files(root: Path) -> tuple[tuple[str, Path], ...]:
    """Every regular file under the model directory (POSIX relative path, source), sorted; no ``__pycache__``."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file_name in names:
            path = Path(folder) / file_name
            if path.is_file():
                found.append((path.relative_to(root).as_posix(), path))
    return tuple(sorted(found))


def _version_dirs(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if p.is_dir() and is_version_name(p.name)]


def _tensor(tensor: mc.ModelInput | mc.ModelOutput) -> IOSpec:
    reshape = tuple(tensor.reshape.shape) if tensor.HasField("reshape") else None
    return IOSpec(
        name=tensor.name,
        data_type=mc.DataType.Name(tensor.data_type),
        dims=tuple(tensor.dims),
        optional=bool(getattr(tensor, "optional", False)),
        reshape=reshape,
    )
