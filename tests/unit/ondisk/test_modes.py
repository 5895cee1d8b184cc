"""A repository is readable by whoever serves it: modes are written, not left to the builder's umask.

NGC's images and KServe's runtime serve as uid 1000. A build under ``umask 077`` used to leave every
file 0600 and every directory 0700, so a container running as 1000 loaded 0 models ("failed to open
directory"). The writer now gives files 0644 (0755 when what it carries is executable) and
directories 0755; tests/containers/test_used_by_line.py serves such builds with ``--user 1000:1000``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from repogen.ondisk.writer import write_repository

ROOT = Path(__file__).resolve().parents[3]


def _modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix() or ".": stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("app", ["examples/quickstart/app.py:models", "examples/classifier/app.py:models"])
def test_a_build_under_umask_077_is_readable_by_everyone(tmp_path, app):
    """The classifier ships a file of the user's (files=["weights.json"]), copied in, not written."""
    output = tmp_path / "private" / "model_repository"
    subprocess.run([sys.executable, "-m", "repogen", "build", app, "-o", str(output)],
                   cwd=ROOT, check=True, capture_output=True, umask=0o077)  # fmt: skip
    modes = _modes(output)
    assert {p for p, m in modes.items() if (output / p).is_dir() and m != 0o755} == set()
    assert {p for p, m in modes.items() if (output / p).is_file() and m != 0o644} == set()
    assert len(modes) > 20 and stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o700  # only its own
    if "classifier" in app:
        assert [p for p in modes if p.endswith("weights.json")]


def test_a_carried_file_others_cannot_read_is_copied_readable_and_left_as_it_was(tmp_path):
    private, tool = tmp_path / "weights.bin", tmp_path / "tool.sh"
    private.write_bytes(b"w" * 10)
    tool.write_bytes(b"#!/bin/sh\n")
    os.chmod(private, 0o600)
    os.chmod(tool, 0o700)
    readable = tmp_path / "readable.bin"
    readable.write_bytes(b"r")
    os.chmod(readable, 0o444)
    output = tmp_path / "repo"
    links = {"M/1/files/weights.bin": str(private), "M/1/files/tool.sh": str(tool), "M/1/files/r.bin": str(readable)}
    write_repository({"M/config.pbtxt": b'name: "M"\n'}, output, links=links)
    modes = _modes(output)
    assert modes["M/1/files/weights.bin"] == 0o644 and modes["M/1/files/tool.sh"] == 0o755
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and stat.S_IMODE(tool.stat().st_mode) == 0o700
    assert (output / "M/1/files/r.bin").stat().st_ino == readable.stat().st_ino  # readable by all: linked
    assert modes["M/config.pbtxt"] == 0o644 and modes["."] == modes["M"] == modes["M/1/files"] == 0o755
