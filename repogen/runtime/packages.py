"""Third-party packages shipped inside a model version: chosen, verified and put first on ``sys.path``.

A build installs every distribution a payload imports (numpy aside: the container has it) into
``<model>/<version>/packages/<tag>/``, one tree per container Python and machine it targets, and
records each tree's digest in ``model.json``. At load the runtime picks the tree for the Python and
machine it runs on, refuses it if any file differs from what the build wrote, and prepends it to
``sys.path`` so it wins over whatever the server's environment holds.

The digest is defined here, on the runtime's side, because the runtime is vendored and imports
nothing of the compiler; the build computes the same digest from its wheel cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import PayloadError
from .records import Metadata

PACKAGES_DIR = "packages"  # <model>/<version>/packages/<tag>/
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
PYCACHE_DIR = "repogen-pycache"  # under the temp directory, where no shipped tree carries bytecode
LISTING_SUFFIX = ".files.json"  # packages/<tag>.files.json: every file's sha256, to name what changed
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def abi_tag(python: str) -> str:
    """``cp310`` for CPython 3.10: its wheels' ABI tag."""
    major, minor = python.split(".")[:2]
    return f"cp{major}{minor}"


def tree_tag(python: str, machine: str) -> str:
    """``cp310-x86_64``: the directory of one (container Python, machine) tree."""
    return f"{abi_tag(python)}-{machine}"


def running_tag() -> str:
    machine = platform.machine().lower()
    return tree_tag("{}.{}".format(*sys.version_info[:2]), MACHINES.get(machine, machine))


def digest_of(entries: Iterable[tuple[str, str]]) -> str:
    """One sha256 over (relative POSIX path, file sha256) pairs, in path order."""
    digest = hashlib.sha256()
    for path, file_digest in sorted(entries):
        digest.update(f"{path}\0{file_digest}\n".encode())
    return digest.hexdigest()


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tree_files(root: str) -> dict[str, str]:
    """Every file under ``root`` (relative POSIX path -> sha256), ``__pycache__`` of other Pythons included."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root).replace(os.sep, "/")] = _file_sha256(path)
    return found


def tree_differences(root: str, digest: Any) -> tuple[dict[str, str], dict[str, list[str]] | None]:
    """The tree's files (path -> sha256), and None when their digest is ``digest``; else the paths
    ``changed``, ``missing`` and ``added`` against the listing the build wrote beside the tree
    (all empty when that listing is gone or unreadable).

    A file the listing records as empty may be missing: object stores copy a tree file by file, and
    KServe's S3 and Azure downloads skip zero-byte objects. The build fills empty Python sources, so
    only data files (``py.typed``) are left to this, and their absence is what their content was.
    """
    found = tree_files(root)
    if digest_of(found.items()) == digest:
        return found, None
    try:
        with open(root + LISTING_SUFFIX, encoding="utf-8") as handle:
            expected = dict(json.load(handle))
    except (OSError, ValueError, TypeError):
        expected = {}
    skipped = {p: EMPTY_SHA256 for p, sha in expected.items() if sha == EMPTY_SHA256 and p not in found}
    if skipped and digest_of({**found, **skipped}.items()) == digest:
        return found, None
    return found, {
        "changed": sorted(p for p in found if p in expected and found[p] != expected[p]),
        "missing": sorted(p for p in expected if p not in found),
        "added": sorted(p for p in found if p not in expected),
    }


def activate(meta: Mapping[str, Any], model: str, version_dir: str) -> str | None:
    """Put this server's tree first on ``sys.path``; the tree's tag, or None when nothing ships.

    Refuses a tree that is missing or differs from the build (naming the files), and a server whose
    Python or machine the build made no tree for.
    """
    trees = meta.get(Metadata.PACKAGES) or {}
    if not trees:
        return None
    tag = running_tag()
    entry = trees.get(tag)
    if not isinstance(entry, dict):
        built = ", ".join(sorted(trees)) or "none"
        raise PayloadError(
            f"model '{model}' ships its packages for {built}, but this server runs Python "
            f"{'{}.{}'.format(*sys.version_info[:2])} on {platform.machine()} ({tag}); rebuild without "
            "--triton-release (every NGC container's Python), with the --triton-release of this container, or "
            "with --platform for this machine"
        )
    root = os.path.join(version_dir, PACKAGES_DIR, tag)
    if not os.path.isdir(root):
        raise PayloadError(
            f"model '{model}': {root} is missing, but model.json lists it with its packages "
            f"({', '.join(_locked(entry))}); copy the whole model directory, or rebuild with `repogen build`"
        )
    _verify(model, root, entry)
    if sys.path[:1] != [root]:
        sys.path.insert(0, root)
    if not entry.get("bytecode"):  # compile once per container into /tmp, never into the model directory
        sys.pycache_prefix = os.path.join(tempfile.gettempdir(), PYCACHE_DIR)
    sys.dont_write_bytecode = bool(entry.get("bytecode"))
    return tag


def _locked(entry: Mapping[str, Any]) -> list[str]:
    return [f"{pin.get('name')}=={pin.get('version')}" for pin in entry.get("lock") or []]


def _verify(model: str, root: str, entry: Mapping[str, Any]) -> None:
    _, differences = tree_differences(root, entry.get("digest"))
    if differences is None:
        return
    labels = {"changed": "changed:", "missing": "missing:", "added": "not from the build:"}
    parts = [
        f"{labels[kind]} {', '.join(paths[:3])}{' and more' if len(paths) > 3 else ''}"
        for kind, paths in differences.items()
        if paths
    ]
    raise PayloadError(
        f"model '{model}': refusing the packages in {root}: their digest is not the one the build recorded "
        f"({'; '.join(parts) or 'the file list differs'}); a shipped file was modified, removed or added after "
        "`repogen build`: rebuild the repository (or restore the directory)"
    )
