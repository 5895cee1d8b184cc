"""Is a repository on disk still the one the build wrote? The manifest's files and the package trees.

The writer refuses to replace an output holding files it did not write, a ``--model-version`` merge
refuses to carry a file that changed, ``repogen validate`` reports both, and the runtime refuses a
changed package tree at load: one set of checks, here (the runtime's own copy of the tree digest is
``repogen.runtime.packages``, which this module uses).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..hashing import sha256_file
from ..runtime.contract import MANIFEST_FILE, METADATA_FILE, SIGNATURE_FILE, Manifest, Metadata
from ..runtime.contract.package_trees import PACKAGES_DIR, tree_differences


def _manifest(output: Path) -> dict[str, Any]:
    try:
        data = json.loads((output / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_manifest_files(output: Path) -> dict[str, str] | None:
    """The manifest's ``files`` (relative path -> sha256), or None where there is no readable manifest."""
    listed = _manifest(output).get(Manifest.FILES)
    return listed if isinstance(listed, dict) else None


def read_manifest_packages(output: Path) -> dict[str, dict[str, object]]:
    """The manifest's package trees (repository directory -> digest, files, size); none when unreadable."""
    trees = _manifest(output).get(Manifest.PACKAGES)
    return trees if isinstance(trees, dict) else {}


def _all_files(output: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every file (or symlink) under ``output``, relative; directories in ``skip`` are not entered."""
    found = []
    for folder, dirs, files in os.walk(output):
        relative = os.path.relpath(folder, output).replace(os.sep, "/")
        prefix = "" if relative == "." else relative + "/"
        dirs[:] = [d for d in dirs if prefix + d not in skip or os.path.islink(os.path.join(folder, d))]
        found += [prefix + name for name in files]
        found += [prefix + d for d in dirs if os.path.islink(os.path.join(folder, d))]
    return sorted(found)


def is_signature(relative: str) -> bool:
    """``model.sig`` at the root or in a model directory: written after the manifest, so never listed in it."""
    return relative == SIGNATURE_FILE or (relative.count("/") == 1 and relative.endswith("/" + SIGNATURE_FILE))


def unlisted_files(output: Path) -> list[str]:
    """Files in an existing output that its manifest does not list: the user's, not ours.

    The package trees the manifest lists are ours as a whole (their digests are checked by
    ``repogen validate`` and at load), so they are not walked file by file; the signatures are ours too.
    """
    listed = read_manifest_files(output)
    if listed is None:
        return _all_files(output)
    trees = frozenset(read_manifest_packages(output))
    return [
        p
        for p in _all_files(output, trees)
        if p not in listed and p != MANIFEST_FILE and "__pycache__" not in p and not is_signature(p)
    ]


def changed_files(output: Path, listed: dict[str, str]) -> list[tuple[str, str | None, str]]:
    """(relative path, its sha256 now or None when missing, the sha256 listed) for each file that differs."""
    changed = []
    for relative, expected in sorted(listed.items()):
        path = output / relative
        found = sha256_file(path) if path.is_file() else None
        if found != expected:
            changed.append((relative, found, expected))
    return changed


def tree_problems(version_dir: Path, metadata: dict[str, Any]) -> list[tuple[Path, str]]:
    """(path, what is wrong) for each shipped package tree that is not the one the build recorded."""
    problems = []
    for tag, entry in sorted((metadata.get(Metadata.PACKAGES) or {}).items()):
        root = version_dir / PACKAGES_DIR / tag
        if not root.is_dir():
            problems.append((root, f"missing: {METADATA_FILE} lists this package tree; copy the whole model directory"))
            continue
        _, differences = tree_differences(str(root), entry.get("digest"))
        if differences is None:
            continue
        labels = {"changed": "changed after the build", "missing": "missing", "added": "not from the build"}
        for kind, paths in differences.items():
            problems += [
                (root / p, f"{labels[kind]}: the runtime refuses this package tree; rebuild") for p in paths[:20]
            ]
        if not any(differences.values()):
            problems.append((root, f"digest differs from {METADATA_FILE}'s; rebuild"))
    return problems
