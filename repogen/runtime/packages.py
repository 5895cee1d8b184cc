"""Third-party packages shipped inside a model version: chosen, verified and put first on ``sys.path``.

A build installs every distribution a payload imports (numpy aside: the container has it) into
``<model>/<version>/packages/<tag>/``, one tree per container Python and machine it targets, and
records each tree's digest in ``model.json``. At load the runtime picks the tree for the Python and
machine it runs on, refuses it if any file differs from what the build wrote, and prepends it to
``sys.path`` so it wins over whatever the server's environment holds.

The trees' directory, tags and digest are the contract's (runtime/contract/package_trees.py): the build computes
the same digest from its wheel cache.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from .contract import Metadata
from .contract.package_trees import PACKAGES_DIR, tree_differences, tree_tag
from .errors import PayloadError

MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
PYCACHE_DIR = "repogen-pycache"  # under the temp directory, where no shipped tree carries bytecode


def running_tag() -> str:
    machine = platform.machine().lower()
    return tree_tag("{}.{}".format(*sys.version_info[:2]), MACHINES.get(machine, machine))


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
