"""repogen.testing.prerequisites: a skip only for a capability the machine withholds, a failure for a missing tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogen.testing import prerequisites
from repogen.testing.prerequisites import CAP_SYS_ADMIN, has_capability, require_capability, require_tool


def _status(tmp_path: Path, effective: int) -> Path:
    path = tmp_path / "status"
    path.write_text(f"Name:\tpython\nCapPrm:\t000001ffffffffff\nCapEff:\t{effective:016x}\nCapBnd:\t000001ffffffffff\n")
    return path


def test_the_effective_set_is_read_bit_by_bit(tmp_path: Path) -> None:
    assert has_capability(CAP_SYS_ADMIN, _status(tmp_path, 1 << CAP_SYS_ADMIN))
    assert not has_capability(CAP_SYS_ADMIN, _status(tmp_path, 0x1FFFFFFFFFF & ~(1 << CAP_SYS_ADMIN)))
    (tmp_path / "empty").write_text("Name:\tpython\n")
    with pytest.raises(LookupError, match="no CapEff line"):
        has_capability(CAP_SYS_ADMIN, tmp_path / "empty")


def test_a_withheld_capability_skips_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prerequisites, "has_capability", lambda capability: False)
    with pytest.raises(pytest.skip.Exception, match="needs CAP_SYS_ADMIN to mount a tmpfs: this machine withholds"):
        require_capability(CAP_SYS_ADMIN, "mount a tmpfs")
    monkeypatch.setattr(prerequisites, "has_capability", lambda capability: True)
    require_capability(CAP_SYS_ADMIN, "mount a tmpfs")


def test_a_missing_tool_fails_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prerequisites.shutil, "which", lambda command: None)
    with pytest.raises(pytest.fail.Exception, match=r"needs gcc to link a library; install it \(Debian: apt-get "):
        require_tool("gcc", "gcc", "link a library")
    monkeypatch.setattr(prerequisites.shutil, "which", lambda command: f"/usr/bin/{command}")
    assert require_tool("gcc", "gcc", "link a library") == "/usr/bin/gcc"
