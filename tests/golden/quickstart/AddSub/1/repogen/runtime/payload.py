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


def check_python(meta: dict[str, Any], model: str) -> None:
    built = meta["build"]["python"]
    serving = "{}.{}".format(*sys.version_info[:2])
    if built != serving:
        raise PayloadError(
            f"model '{model}' was built with Python {built} but this server runs Python {serving}; "
            f"pickled code only loads on the Python minor version that built it. Rebuild with Python "
            f"{serving} (e.g. `repogen build --target-triton <release>` from a matching interpreter), "
            f"or serve from a Python {built} environment"
        )


def verify_file(path: str, expected_sha256: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read()
    found = hashlib.sha256(data).hexdigest()
    if found != expected_sha256:
        raise PayloadError(
            f"refusing to unpickle {path}: its sha256 is {found} but the build recorded "
            f"{expected_sha256}; the file was modified or corrupted after `repogen build`, rebuild "
            "the repository"
        )
    return data


def load_payload(version_dir: str, model: str) -> tuple[dict[str, Any], Any]:
    """Return the sidecar metadata and the unpickled payload of one model version."""
    meta = read_metadata(version_dir)
    check_python(meta, model)
    entry = meta["payload"]
    data = verify_file(os.path.join(version_dir, entry["file"]), entry["sha256"])
    try:
        payload = pickle.loads(data)
    except ModuleNotFoundError as exc:
        raise PayloadError(_missing_module_message(meta, model, exc.name or "")) from exc
    return meta, payload


def _missing_module_message(meta: dict[str, Any], model: str, module: str) -> str:
    top = module.split(".")[0]
    dist = meta.get("requirements", {}).get(top)
    what = f"distribution '{dist}'" if dist else f"the package that provides module '{top}'"
    return (
        f"model '{model}' needs module '{module}', which this server's Python cannot import; install "
        f"{what} into the server's environment (see the requirements recorded in {METADATA_FILE})"
    )
