"""The contract's package trees: the directory a version ships them in, their tags, their digest and listing.

runtime/packages.py verifies and activates a version's trees; the build computes the same digest from its wheel
cache (``repogen.packages``) and ``repogen.ondisk`` checks a built repository the way the runtime will. A module of
the contract's package apart from its ``__init__``, which every model carries, so that only a version shipping trees
carries this (emit/vendoring.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

PACKAGES_DIR = "packages"  # <model>/<version>/packages/<tag>/: a shipped package tree
LISTING_SUFFIX = ".files.json"  # packages/<tag>.files.json: every file's sha256, to name what changed
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def abi_tag(python: str) -> str:
    """``cp310`` for CPython 3.10: its wheels' ABI tag."""
    major, minor = python.split(".")[:2]
    return f"cp{major}{minor}"


def tree_tag(python: str, machine: str) -> str:
    """``cp310-x86_64``: the directory of one (container Python, machine) tree."""
    return f"{abi_tag(python)}-{machine}"


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
