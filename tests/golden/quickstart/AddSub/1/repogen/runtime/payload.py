"""Load a model's pickled payload only after proving it is the one that was built.

The sidecar ``model.json`` written beside ``model.pkl`` records the payload's sha256 and the
build's Python, numpy and cloudpickle versions. Checking them first turns a corrupted file or an
incompatible interpreter into one clear message instead of an unpickling traceback or a crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
from typing import Any

from .errors import PayloadError

METADATA_FILE = "model.json"
MANIFEST_FILE = "repogen.manifest.json"  # at the repository root; emit/files.py writes it
FORMAT = 1


def read_metadata(version_dir: str) -> dict[str, Any]:
    path = os.path.join(version_dir, METADATA_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            meta: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        raise PayloadError(f"{path} is missing; rebuild the repository with `repogen build`") from None
    if meta.get("format") != FORMAT:
        raise PayloadError(
            f"{path} has format {meta.get('format')!r}, this runtime reads format {FORMAT}; "
            "rebuild the repository with the repogen version that vendored this runtime"
        )
    return meta


def check_python(meta: dict[str, Any], model: str, version_dir: str = "") -> None:
    """Refuse a payload written by another Python minor: its bytecode would fail or crash the stub."""
    built = (meta.get("build") or {}).get("python")
    serving = "{}.{}".format(*sys.version_info[:2])
    if built == serving:
        return
    target = meta.get("target") or {}
    aimed = f" for {target['image']}" if target.get("image") else ""
    raise PayloadError(
        f"model '{model}' was built{aimed} with Python {built} ({os.path.join(version_dir, METADATA_FILE)}), but "
        f"this server runs Python {serving}; pickled code only loads on the Python minor version that built it. "
        f"Rebuild with a Python {serving} interpreter (`repogen build --target-triton <release>` checks this), "
        f"build inside the serving image with `repogen deploy --docker`, or serve with Python {built}"
    )


def verify_file(path: str, expected_sha256: str) -> bytes:
    """The payload's bytes, only if they are the bytes the build hashed."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise PayloadError(
            f"{path} is missing, but {METADATA_FILE} lists it as the payload; rebuild the repository"
        ) from None
    found = hashlib.sha256(data).hexdigest()
    if found != expected_sha256:
        raise PayloadError(
            f"refusing to unpickle {path}: sha256 mismatch, expected {expected_sha256} (recorded by the build), "
            f"found {found}; the file was modified or corrupted after `repogen build`: rebuild the repository "
            "(or restore the file)"
        )
    return data


def payload_entry(meta: dict[str, Any], version_dir: str) -> tuple[str, str]:
    """The payload's path and sha256 as the sidecar lists them, confined to the version directory.

    Only the one file the sidecar names, by a plain file name, is ever unpickled: a name with a path
    separator or ``..`` could point the unpickler at a file the build never wrote.
    """
    entry = meta.get("payload")
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
            listed = json.load(fh)["files"]
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


def load_payload(version_dir: str, model: str) -> tuple[dict[str, Any], Any]:
    """Return the sidecar metadata and the unpickled payload of one model version."""
    meta = read_metadata(version_dir)
    check_python(meta, model, version_dir)
    path, digest = payload_entry(meta, version_dir)
    check_manifest(version_dir, path, digest)
    data = verify_file(path, digest)
    try:
        payload = pickle.loads(data)
    except ModuleNotFoundError as exc:
        raise PayloadError(_missing_module_message(meta, model, exc.name or "")) from exc
    return meta, payload


def _missing_module_message(meta: dict[str, Any], model: str, module: str) -> str:
    """Name the distribution to install (``PyYAML`` for ``yaml``), as the build recorded it."""
    top = module.split(".")[0]
    requirements = meta.get("requirements") or {}
    dist = requirements.get(top)
    if dist:
        what = f"distribution '{dist}' (`pip install '{dist}'`)"
    else:
        what = f"the distribution that provides module '{top}'"
    recorded = ", ".join(sorted(requirements.values())) or "none"
    return (
        f"model '{model}' needs module '{module}', which this server's Python cannot import; install {what} "
        f"into the server's environment (every requirement recorded in {METADATA_FILE}: {recorded}), or "
        "deploy with `repogen deploy --docker`, which installs them"
    )
