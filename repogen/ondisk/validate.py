"""``repogen validate``: static checks that predict whether a stock tritonserver loads a repository.

tritonserver's own messages are terse ("failed to read text proto from ...") and arrive one
model at a time at server start; these checks run anywhere (CI, no server) and each problem
names the file, what was expected, what was found and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import RepositoryError
from ..runtime.contract import CONFIG_FILE, MANIFEST_FILE, METADATA_FILE, MODEL_FILE
from ..triton import fields
from ..triton.gpus import gpu_shortfall
from ..triton.releases import NEWEST, Release, first_with_python, get_release
from . import compatibility
from .ensembles import check_ensemble
from .integrity import changed_files, is_signature, tree_problems
from .problems import Problem
from .reader import BuiltRepository, ModelDir, files, load_json, model_dirs, read_manifest, sha256


def _server(release: str | Release) -> str:
    found = get_release(release)
    return f"{found.ngc} (tritonserver {found.tritonserver})"


def _line_of(path: Path, field: str) -> int:
    """The first line of ``path`` that sets ``field`` (``field:`` or ``field {``), 0 when none does."""
    pattern = re.compile(rf"(^|[\s{{]){re.escape(field)}\s*[:{{]")
    for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if pattern.search(text.split("#", 1)[0]):
            return number
    return 0


def _beyond_the_schema(message: str, release: Release) -> str | None:
    """A field repogen's schema lacks, for a release newer than the table: a warning, since that server may know it.

    The schema (r26.07) is taken to hold up to the newest release in the table, as the table's other facts are.
    """
    unknown = fields.unknown_field(message)
    if unknown is None or not release.assumed:
        return None
    field, full_name = unknown
    return (
        f"field {field!r} ({full_name}) is not in Triton's ModelConfig schema up to r{fields.SCHEMA_RELEASE}, the "
        f"newest repogen knows; the requested release {_server(release)} is newer and may know it, so the rest of "
        "this model's config is not checked"
    )


def explain_parse_error(message: str) -> str:
    """Turn protobuf's parse error into what to do."""
    unknown = fields.unknown_field(message)
    if unknown is None:
        return f"does not parse as a Triton ModelConfig (r{fields.SCHEMA_RELEASE} schema): {message}"
    field, full_name = unknown
    return (
        f"unknown field {field!r} in {full_name.rsplit('.', 1)[0]}: it is not in Triton's ModelConfig schema up to "
        f"r{fields.SCHEMA_RELEASE}, so tritonserver rejects the whole model. Check the spelling, or remove it"
    )


# The file each backend loads from a version directory unless default_model_filename says otherwise.
_MODEL_FILES = {
    "python": (MODEL_FILE, "the file the stub imports"),
    "onnxruntime": ("model.onnx", "the graph the onnxruntime backend loads"),
    "pytorch_libtorch": ("model.pt", "the TorchScript module the pytorch backend loads"),
    "tensorrt_plan": ("model.plan", "the engine the tensorrt backend loads"),
}


def _check_model(model: ModelDir, release: Release) -> list[Problem]:
    config_path = model.path / CONFIG_FILE
    problems: list[Problem] = []
    if not model.has_config:
        return [
            Problem.at(
                model.path,
                f"no {CONFIG_FILE}: tritonserver loads every subdirectory of the repository as a model; "
                f"add {model.name}/{CONFIG_FILE} or move the directory out of the repository",
            )
        ]
    if model.error is not None:
        newer = _beyond_the_schema(model.error.message, release)
        if newer:
            problems.append(Problem.at(config_path, newer, model.error.line, warning=True))
        else:
            problems.append(Problem.at(config_path, explain_parse_error(model.error.message), model.error.line))
    config = model.config
    if config is not None:
        for name in sorted(set(fields.set_fields(config))):
            if not fields.supported_by(name, release):
                problems.append(
                    Problem.at(
                        config_path,
                        line=_line_of(config_path, name.rsplit(".", 1)[-1]),
                        message=f"sets {name.rsplit('.', 1)[-1]!r} ({name}), introduced in Triton "
                        f"{fields.introduced_in(name)}; the requested release {_server(release)} rejects "
                        "the whole model. Remove it, or target a newer release",
                    )
                )
        if config.name and config.name != model.name:
            problems.append(
                Problem.at(
                    config_path,
                    f"name is {config.name!r} but the directory is {model.name!r}; tritonserver requires them "
                    f'to match: set name: "{model.name}" or rename the directory',
                )
            )
    problems.extend(_check_versions(model))
    runs_on = config.backend or config.platform if config is not None else ""
    if config is not None and runs_on in _MODEL_FILES:
        default, what = _MODEL_FILES[runs_on]
        filename = config.default_model_filename or default
        for version in model.versions:
            if not (model.path / str(version) / filename).is_file():
                problems.append(
                    Problem.at(
                        model.path / str(version),
                        f"{runs_on}-backend model {model.name!r} version {version} has no {filename}; "
                        f"expected {model.name}/{version}/{filename} ({what})",
                    )
                )
    problems.extend(_check_payloads(model))
    return problems


def _check_versions(model: ModelDir) -> list[Problem]:
    problems = []
    for name in model.other_dirs:
        if name.isascii() and name.isdigit():
            problems.append(
                Problem.at(
                    model.path / name,
                    f"version directory {name!r} has a leading zero, so tritonserver ignores it; "
                    f"rename it to {int(name)}",
                )
            )
    if not model.versions:
        problems.append(
            Problem.at(
                model.path,
                f"model {model.name!r} has no numeric version directory; expected e.g. {model.name}/1/ "
                "(ensembles need one too, even if empty)",
            )
        )
    config = model.config
    if config is not None and config.version_policy.HasField("specific"):
        for version in config.version_policy.specific.versions:
            if version not in model.versions:
                problems.append(
                    Problem.at(
                        model.path / CONFIG_FILE,
                        f"version_policy asks for version {version}, but {model.name}/{version}/ does not exist "
                        f"(found {list(model.versions)})",
                    )
                )
    return problems


def _check_payloads(model: ModelDir) -> list[Problem]:
    """model.json records the payload's sha256; the runtime refuses a payload that does not match."""
    problems = []
    for version in model.versions:
        metadata_path = model.path / str(version) / METADATA_FILE
        if not metadata_path.is_file():
            continue
        try:
            metadata = load_json(metadata_path)
            payload = metadata.get("payload") or {}
        except RepositoryError as exc:
            problems.append(Problem.at(metadata_path, f"is not a JSON object ({exc.__cause__ or exc}); rebuild"))
            continue
        problems += [Problem.at(path, why) for path, why in tree_problems(metadata_path.parent, metadata)]
        if not isinstance(payload, dict) or not payload.get("file") or not payload.get("sha256"):
            continue
        payload_path = model.path / str(version) / payload["file"]
        if not payload_path.is_file():
            problems.append(Problem.at(payload_path, f"missing: {METADATA_FILE} lists it as the payload; rebuild"))
        elif (found := sha256(payload_path)) != payload["sha256"]:
            problems.append(
                Problem.at(
                    payload_path,
                    f"sha256 is {found}, but {METADATA_FILE} expects {payload['sha256']}: the runtime will refuse "
                    "to unpickle it; rebuild with `repogen build` (or restore the file)",
                )
            )
    return problems


def _check_manifest(repository: Path, models: list[ModelDir]) -> list[Problem]:
    manifest_path = repository / MANIFEST_FILE
    if not manifest_path.is_file():
        return []
    try:
        listed = load_json(manifest_path).get("files")
        if not isinstance(listed, dict):
            raise RepositoryError("'files' is not an object")
    except RepositoryError as exc:
        return [Problem.at(manifest_path, f"is not a repogen manifest ({exc.__cause__ or exc}); rebuild it")]
    problems = []
    for relative, found, expected in changed_files(repository, listed):
        path = repository / relative
        if found is None:
            problems.append(
                Problem.at(path, f"missing: listed in {MANIFEST_FILE} but not on disk; rebuild or restore it")
            )
        else:
            problems.append(
                Problem.at(
                    path,
                    f"sha256 is {found}, but {MANIFEST_FILE} lists {expected}: the file changed after the build; "
                    "rebuild with `repogen build` (or restore the file)",
                )
            )
    for model in models:
        for relative in files(model.path):
            full = f"{model.name}/{relative}"
            if full not in listed and not is_signature(full):
                problems.append(
                    Problem.at(
                        repository / full,
                        f"not listed in {MANIFEST_FILE}: added after the build; remove it, or rebuild to include it",
                    )
                )
    return problems


def _check_gpus(models: list[ModelDir], gpus: int | None) -> list[Problem]:
    """An error per model that needs more GPUs than the server's ``gpus``: it would fail to load there."""
    if gpus is None:
        return []
    found = [(m, gpu_shortfall(m.name, m.gpus_needed, m.gpu_groups, gpus)) for m in models if m.gpus_needed]
    return [Problem.at(model.path / CONFIG_FILE, message) for model, message in found if message]


def validate_repository(
    repository: str | Path, release: str | Release | None = None, gpus: int | None = None
) -> list[Problem]:
    """Every problem found in ``repository``, in a stable order; an empty list means clean.

    ``release`` (any release of the table, in any spelling) is the one that must load it: a field it
    does not know, a Python, CUDA major or python_backend rule of its container that the repository
    does not meet is an error. Without it, every release the build recorded it serves is checked
    (:func:`checked_releases`). A field newer than repogen's schema is a warning for a release newer
    than the schema (``Problem.warning``): the server may load it, but the rest of that config goes unchecked.
    ``gpus``: the NVIDIA GPUs the server will have; a model needing more is an error (None: not checked).
    """
    repo = Path(repository)
    if not repo.is_dir():
        return [Problem.at(repo, "is not a directory; expected a model repository (<model>/config.pbtxt)")]
    models = model_dirs(repo)
    if not models:
        return [Problem.at(repo, "holds no model directories; expected <model>/config.pbtxt and <model>/1/")]
    manifest = read_manifest(repo) or {}
    releases = [get_release(release)] if release is not None else checked_releases(manifest)
    oldest = min(releases, key=lambda r: r.version) if releases else NEWEST
    problems: list[Problem] = []
    by_name = {m.name: m for m in models}
    for model in models:
        problems.extend(_check_model(model, oldest))
        if model.is_ensemble:
            problems.extend(check_ensemble(model, by_name))
    problems.extend(_check_manifest(repo, models))
    problems.extend(_check_gpus(models, gpus))
    info = BuiltRepository(repo, tuple(m for m in models if m.config is not None), manifest)
    for each in releases:
        found = compatibility.fit(info, each, configs=False)
        problems += [Problem.at(repo, message) for message in found.errors]
        problems += [Problem.at(repo, message, warning=True) for message in found.warnings]
    return list(dict.fromkeys(problems))


def checked_releases(manifest: dict[str, Any]) -> list[Release]:
    """The releases a repository says it serves: its one target, else the oldest container of each Python
    it was built for (the newest release for a repository repogen did not build)."""
    target = manifest.get("target")
    if isinstance(target, dict) and target.get("ngc"):
        return [get_release(str(target["ngc"]))]
    if not manifest:
        return [NEWEST]
    pythons = [str(p) for p in manifest.get("pythons") or ()]
    return [r for r in (first_with_python(p) for p in pythons) if r is not None]
