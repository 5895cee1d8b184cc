"""Load a model's pickled payload only after proving it is the one that was built.

The sidecar ``model.json`` written beside ``model.pkl`` records the payload's sha256, the sources
its code is compiled from, the distributions it imports and the build's versions. Checking them
first turns a corrupted file or an unsuitable server into one clear message instead of an
unpickling traceback or a crash.

A *portable* payload (the default) holds no bytecode and loads on any Python >= 3.10 with numpy
>= 1.26; a payload *pinned* to the build's Python (``repogen build --pin-python``) carries bytecode
and loads only on that Python minor.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from .contract import CONFIG_FILE, MANIFEST_FILE, METADATA_FILE, Manifest, Metadata, verified_bytes
from .contract import METADATA_FORMAT as FORMAT
from .errors import PayloadError
from .portable import PayloadUnpickler, Sources

OLDEST_PYTHON = (3, 10)  # the Python of NGC 23.10, the oldest release repogen builds for
OLDEST_NUMPY = (1, 26)


class Load:
    """The payload being unpickled in this process: the device its tensors made on a GPU land on (``cpu`` outside a
    load), the model it serves (for messages), the instance's index (which of ``infer_func=[f, g]`` it serves), and
    whether torch was pointed at that GPU during it (runtime/rebuilt_tensors.py, carried by payloads holding such
    tensors)."""

    def __init__(self, device: str = "cpu", model: str = "", instance: int | None = None):
        self.device = device
        self.model = model
        self.instance = instance
        self.pointed = False


_load = Load()


@contextlib.contextmanager
def loading_on(device: str, model: str = "", instance: int | None = None) -> Iterator[None]:
    """Tensors made on a GPU at build time land on ``device`` while the payload is unpickled here; ``instance``
    (its index) says which of ``infer_func=[f, g]`` it serves."""
    global _load
    previous, _load = _load, Load(device, model, instance)
    try:
        yield
    finally:
        _load = previous


def current_load() -> Load:
    return _load


def read_metadata(version_dir: str) -> dict[str, Any]:
    path = os.path.join(version_dir, METADATA_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            meta: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        raise PayloadError(f"{path} is missing; rebuild the repository with `repogen build`") from None
    if meta.get(Metadata.FORMAT) != FORMAT:
        raise PayloadError(
            f"{path} has format {meta.get(Metadata.FORMAT)!r}, this runtime reads format {FORMAT}; "
            "rebuild the repository with the repogen version that vendored this runtime"
        )
    return meta


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def check_python(meta: dict[str, Any], model: str, version_dir: str = "") -> None:
    """A portable payload needs Python >= 3.10 and numpy >= 1.26; a pinned one, the Python minor that built it."""
    serving = "{}.{}".format(*sys.version_info[:2])
    if meta.get(Metadata.PORTABLE):
        if sys.version_info[:2] < OLDEST_PYTHON or _version(np.__version__) < OLDEST_NUMPY:
            raise PayloadError(
                f"model '{model}' needs Python >= 3.10 and numpy >= 1.26 in the server, found Python {serving} and "
                f"numpy {np.__version__}; serve with an NGC tritonserver container from 23.10 on"
            )
        return
    built = (meta.get(Metadata.BUILD) or {}).get("python")
    if built == serving:
        return
    target = meta.get(Metadata.TARGET) or {}
    aimed = f" for {target['image']}" if target.get("image") else ""
    raise PayloadError(
        f"model '{model}' was built{aimed} with Python {built} ({os.path.join(version_dir, METADATA_FILE)}), but "
        f"this server runs Python {serving}; it was built with --pin-python, and pinned code only loads on the "
        f"Python minor version that built it. Rebuild without --pin-python (portable: any Python from 3.10), "
        f"rebuild with a Python {serving} interpreter, or serve with Python {built}"
    )


def check_requirements(meta: dict[str, Any], model: str) -> None:
    """Every distribution the build recorded must be importable here, or the payload cannot load."""
    requirements = meta.get(Metadata.REQUIREMENTS) or {}
    missing = sorted(
        (module, dist) for module, dist in requirements.items() if importlib.util.find_spec(module) is None
    )
    if missing:
        module, dist = missing[0]
        raise PayloadError(_missing_module_message(meta, model, module) + _also_missing(missing[1:]))


def _also_missing(rest: list[tuple[str, str]]) -> str:
    return f" (also missing: {', '.join(dist for _, dist in rest)})" if rest else ""


def verify_file(path: str, expected_sha256: str) -> bytes:
    """The payload's bytes, only if they are the bytes the build hashed."""
    missing = f"{path} is missing, but {METADATA_FILE} lists it as the payload; rebuild the repository"
    return verified_bytes(path, expected_sha256, doing="unpickle", recorded="recorded by the build", missing=missing)


def payload_entry(meta: dict[str, Any], version_dir: str) -> tuple[str, str]:
    """The payload's path and sha256 as the sidecar lists them, confined to the version directory.

    Only the one file the sidecar names, by a plain file name, is ever unpickled: a name with a path
    separator or ``..`` could point the unpickler at a file the build never wrote.
    """
    entry = meta.get(Metadata.PAYLOAD)
    name = entry.get("file") if isinstance(entry, dict) else None
    digest = entry.get("sha256") if isinstance(entry, dict) else None
    path = os.path.join(version_dir, METADATA_FILE)
    if not isinstance(name, str) or not isinstance(digest, str) or len(digest) != 64:
        raise PayloadError(f"{path} lists no payload file with a sha256; rebuild the repository with `repogen build`")
    if name in ("", ".", "..") or "/" in name or os.sep in name or name == METADATA_FILE:
        raise PayloadError(
            f"{path} names payload {name!r}, which is not a plain file name inside {version_dir}; refusing to "
            "unpickle it. Rebuild the repository with `repogen build`"
        )
    return os.path.join(version_dir, name), digest


def check_manifest(version_dir: str, payload: str, digest: str) -> None:
    """Where the repository's manifest lists this model version, it must list the same payload hash.

    The sidecar alone can be edited together with the payload; the manifest at the repository root
    (the model directory's parent) is a second, independent record. A model copied into another
    repository without the manifest is checked against its sidecar only.
    """
    model_dir = os.path.dirname(os.path.abspath(version_dir))
    manifest_path = os.path.join(os.path.dirname(model_dir), MANIFEST_FILE)
    if not os.path.isfile(manifest_path):
        return
    try:
        with open(manifest_path, encoding="utf-8") as fh:
            listed = json.load(fh)[Manifest.FILES]
        if not isinstance(listed, dict):
            raise TypeError("'files' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PayloadError(
            f"{manifest_path} is not a readable repogen manifest ({exc}); rebuild the repository with "
            "`repogen build` (or remove that file to rely on each model's model.json alone)"
        ) from None
    prefix = "/".join((os.path.basename(model_dir), os.path.basename(os.path.abspath(version_dir)), ""))
    if not any(key.startswith(prefix) for key in listed):
        return
    key = prefix + os.path.basename(payload)
    if listed.get(key) != digest:
        raise PayloadError(
            f"refusing to unpickle {payload}: {manifest_path} lists {key} with sha256 {listed.get(key)}, but "
            f"{METADATA_FILE} expects {digest}; the repository was modified after `repogen build`, rebuild it"
        )


def config_drift(version_dir: str, model: str) -> str | None:
    """A warning when the model's ``config.pbtxt`` differs from the one the manifest lists, else None.

    The server has already parsed the edited file and serves it: this only says so, once, naming the
    file and both hashes. ``repogen validate`` remains the strict check.
    """
    model_dir = os.path.dirname(os.path.abspath(version_dir))
    manifest_path = os.path.join(os.path.dirname(model_dir), MANIFEST_FILE)
    config_path = os.path.join(model_dir, CONFIG_FILE)
    try:
        with open(manifest_path, encoding="utf-8") as fh:
            expected = json.load(fh)[Manifest.FILES].get(f"{os.path.basename(model_dir)}/{CONFIG_FILE}")
        with open(config_path, "rb") as fh:
            found = hashlib.sha256(fh.read()).hexdigest()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no manifest or no file to compare: nothing this check can say
    if not isinstance(expected, str) or found == expected:
        return None
    return (
        f"model '{model}': {config_path} is not the file `repogen build` wrote: its sha256 is {found}, "
        f"{manifest_path} lists {expected}. The server serves the edited configuration as it is; "
        f"`repogen validate {os.path.dirname(model_dir)}` checks the repository, `repogen build` restores the file"
    )


def load_payload(version_dir: str, model: str) -> tuple[dict[str, Any], Any]:
    """Return the sidecar metadata and the unpickled payload of one model version."""
    meta = read_metadata(version_dir)
    check_python(meta, model, version_dir)
    if meta.get(Metadata.PACKAGES):  # runtime/packages.py ships only with package trees
        from .packages import activate

        activate(meta, model, version_dir)
    check_requirements(meta, model)
    path, digest = payload_entry(meta, version_dir)
    check_manifest(version_dir, path, digest)
    data = verify_file(path, digest)
    try:
        if not meta.get(Metadata.PORTABLE):
            return meta, pickle.loads(data)
        listing = os.path.join(version_dir, METADATA_FILE)
        sources = Sources(model, version_dir, meta.get(Metadata.SOURCES) or {}, listing)
        return meta, PayloadUnpickler(io.BytesIO(data), sources).load()
    except ModuleNotFoundError as exc:
        raise PayloadError(_missing_module_message(meta, model, exc.name or "")) from exc


def _missing_module_message(meta: dict[str, Any], model: str, module: str) -> str:
    """Name the distribution to install (``PyYAML`` for ``yaml``), as the build recorded it."""
    top = module.split(".")[0]
    requirements = meta.get(Metadata.REQUIREMENTS) or {}
    dist = requirements.get(top)
    if dist:
        what = f"distribution '{dist}' (`pip install '{dist}'`)"
    else:
        what = f"the distribution that provides module '{top}'"
    recorded = ", ".join(sorted(requirements.values())) or "none"
    return (
        f"model '{model}' needs module '{module}', which this server's Python cannot import; install {what} "
        f"into the server's environment (every requirement recorded in {METADATA_FILE}: {recorded}), deploy with "
        "`repogen deploy --docker`, which installs them, or rebuild without `--packages record` or `--provided` for "
        "it, so that it ships inside the repository"
    )
