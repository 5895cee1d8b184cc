"""``repogen build --model-version N``: add or replace version N beside the versions already built.

Planned under the writer's lock, against the repository on disk at that moment; the writer then
writes the plan. Every file the build does not replace is carried over unchanged (hard-linked into
the staging directory), after its sha256 is checked against the manifest, so a merge never launders
a corrupted file into a fresh manifest. Only ``<model>/<N>/`` of the models being built is replaced;
nothing else is deleted. The signatures of the models left as they were are carried too (they still
cover them); the repository's and the rebuilt models' are not, since they no longer do (a signed
build signs those again).

Versions of one model share one ``config.pbtxt``. Its version policy is bound to the versions present
after the merge (the build lowers it, ``repogen.ir.versions``, and emits the config it is given here);
any other change to the model's config (or its label files) would silently re-declare the versions
kept, so it is refused unless ``--force``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from google.protobuf import text_format

from .. import sbom
from ..errors import BuildError
from ..hashing import Entry, Files, digest, sha256_file
from ..runtime.contract import (
    CONFIG_FILE,
    MANIFEST_FILE,
    METADATA_FILE,
    SBOM_FILE,
    SIGNATURE_FILE,
    Manifest,
    dumps,
    is_version_name,
)
from ..runtime.contract.package_trees import tree_differences
from ..triton.proto import model_config_pb2 as mc
from ..triton.server_options import ServerSettings, server_record
from .integrity import changed_files, read_manifest_files, read_manifest_packages, unlisted_files
from .writer import WritePlan


def _version_of(relative: str) -> int | None:
    """The version directory a path lies in (``Model/3/model.pkl`` -> 3), None for model-level files."""
    parts = relative.split("/")
    return int(parts[1]) if len(parts) > 2 and is_version_name(parts[1]) else None


def _model_of(relative: str) -> str | None:
    return relative.split("/", 1)[0] if "/" in relative else None


def versions_on_disk(output: Path, model: str) -> set[int]:
    """The version directories ``model`` holds in the repository at ``output`` (none when it has no such model)."""
    directory = output / model
    if not directory.is_dir():
        return set()
    return {int(p.name) for p in directory.iterdir() if p.is_dir() and is_version_name(p.name)}


def _check_intact(output: Path, listed: dict[str, str]) -> None:
    """Files we are about to carry must still be the ones the manifest lists."""
    for relative, found, expected in changed_files(output, listed)[:1]:
        raise BuildError(
            f"refusing to add a version to {output}: {relative} has sha256 {found or 'nothing (the file is missing)'}, "
            f"but {MANIFEST_FILE} lists {expected}; restore that file, or rebuild the whole repository "
            "(without --model-version)"
        )


def _without_policy(config: bytes, where: str) -> mc.ModelConfig:
    message = mc.ModelConfig()
    try:
        text_format.Parse(config.decode("utf-8"), message)
    except (text_format.ParseError, UnicodeDecodeError) as exc:
        raise BuildError(
            f"{where} cannot be parsed ({exc}); rebuild the whole repository (without --model-version)"
        ) from exc
    message.ClearField("version_policy")
    return message


def _model_level(files: Files | dict[str, str], model: str) -> set[str]:
    return {p for p in files if _model_of(p) == model and _version_of(p) is None}


def _check_same_config(output: Path, model: str, new: dict[str, Entry], kept: set[int], force: bool) -> None:
    """Kept versions were built for the old config; a different one must be asked for with --force."""
    if not kept or force:
        return
    old_names = {
        p.relative_to(output).as_posix() for p in (output / model).iterdir() if p.is_file() and p.name != SIGNATURE_FILE
    }
    new_names = _model_level(new, model)
    changed = sorted(old_names ^ new_names)
    for name in sorted(old_names & new_names):
        entry = new[name]
        if name.endswith("/" + CONFIG_FILE) and isinstance(entry, bytes):
            old = (output / name).read_bytes()
            same = _without_policy(old, str(output / name)) == _without_policy(entry, f"the new {name}")
        else:
            same = sha256_file(output / name) == digest(entry)
        if not same:
            changed.append(name)
    if changed:
        raise BuildError(
            f"model '{model}': {', '.join(changed)} differ from the repository's, which versions {sorted(kept)} were "
            "built against (versions share one config.pbtxt); build with the same config, rebuild every version "
            "(without --model-version), or pass --force to replace the config for all versions"
        )


def _manifest(
    new_manifest: Entry,
    listed: dict[str, Entry | str],
    models: set[str],
    trees: dict[str, dict[str, object]],
    records: dict[str, bytes],
) -> bytes:
    """The merged repository's manifest: every file's hash, every model, the package trees kept and new, and the
    server options every model of it (the carried ones too) depends on."""
    assert isinstance(new_manifest, bytes)  # emitted, never copied
    data = json.loads(new_manifest)
    settings = ServerSettings.from_record((data.get(Manifest.SERVER) or {}).get("settings"))
    data.pop(Manifest.SERVER, None)
    data.update(server_record(settings, records))
    data[Manifest.FILES] = {p: v if isinstance(v, str) else digest(v) for p, v in sorted(listed.items())}
    data[Manifest.MODELS] = sorted(models)
    trees = {**trees, **(data.get(Manifest.PACKAGES) or {})}
    if trees:
        data[Manifest.PACKAGES] = dict(sorted(trees.items()))
    return dumps(data)


def _kept_trees(output: Path, keep: Callable[[str], bool]) -> tuple[dict[str, dict[str, object]], dict[str, Path]]:
    """The package trees of versions kept, checked against their digests, and their files to carry."""
    trees = {d: r for d, r in read_manifest_packages(output).items() if keep(d + "/")}
    carried: dict[str, Path] = {}
    for directory, record in trees.items():
        digest = record.get("digest") if isinstance(record, dict) else None
        found, differences = tree_differences(str(output / directory), digest)
        if differences is not None:
            raise BuildError(
                f"refusing to add a version to {output}: the packages in {directory} are not the ones {MANIFEST_FILE} "
                "records (a file was changed, removed or added); rebuild the whole repository (without --model-version)"
            )
        carried.update({f"{directory}/{p}": output / directory / p for p in found})  # hashed once, above
    return trees, carried


def _records(output: Path, entries: dict[str, Entry | str]) -> dict[str, bytes]:
    """The merged repository's model.json and config.pbtxt files: written now, or carried, read from disk."""
    return {
        p: v if isinstance(v, bytes) else (output / p if isinstance(v, str) else v.source).read_bytes()
        for p, v in entries.items()
        if p.endswith((f"/{METADATA_FILE}", f"/{CONFIG_FILE}"))
    }


def _sbom(output: Path, entries: dict[str, Entry | str]) -> bytes:
    """The SBOM of the merged repository: the records written now, and those carried read from disk."""
    records = _records(output, entries)
    digests = {p: v if isinstance(v, str) else digest(v) for p, v in entries.items() if p != SBOM_FILE}
    return sbom.document(records, digests)


def merge_versions(
    output: Path, files: Files, *, versions: dict[str, int], configs: dict[str, bytes], force: bool
) -> WritePlan:
    """The plan that puts ``files`` (version ``versions[model]`` of each model) beside what ``output`` holds.

    ``configs`` are the models' ``config.pbtxt`` for the versions present after the merge (the build makes
    them from ``versions_on_disk``, under the writer's lock).
    """
    listed = read_manifest_files(output) or {}
    _check_intact(output, listed)
    new = {p: d for p, d in files.items() if p != MANIFEST_FILE}
    for model, number in versions.items():
        new[f"{model}/{CONFIG_FILE}"] = configs[model]
        _check_same_config(output, model, new, versions_on_disk(output, model) - {number}, force)

    def replaced(relative: str) -> bool:
        model = _model_of(relative)
        return relative in new or (model in versions and _version_of(relative) == versions[model])

    carried_listed = {p: h for p, h in listed.items() if not replaced(p)}
    carried: dict[str, Path | str] = {p: output / p for p in carried_listed}
    carried.update({p: output / p for p in unlisted_files(output) if not replaced(p)})  # only with --force
    signatures = (f"{m.name}/{SIGNATURE_FILE}" for m in output.iterdir() if m.is_dir() and m.name not in versions)
    carried.update({p: output / p for p in signatures if (output / p).is_file()})
    trees, tree_files_carried = _kept_trees(output, lambda p: not replaced(p))
    carried.update(tree_files_carried)
    models = {m for m in map(_model_of, [*carried_listed, *new]) if m}
    entries: dict[str, Entry | str] = {**carried_listed, **new}
    new[SBOM_FILE] = entries[SBOM_FILE] = _sbom(output, entries)
    new[MANIFEST_FILE] = _manifest(files[MANIFEST_FILE], entries, models, trees, _records(output, entries))
    return WritePlan(files=dict(sorted(new.items())), carried=carried)
