"""`Serving`, `repogen serve` as a library, in this process: start, status, reload, stop, and nothing left after.

The command's own behaviour (its output, Ctrl+C, SIGTERM) is tested through the CLI (test_cli_serve.py,
test_serve_ctrl_c.py, test_cli_reload.py); these drive the object the command runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from serve_cli import ROOT, group_pids

from repogen.errors import RepogenError, ServeError, UsageError
from repogen.server.client.access_key import runs_root
from repogen.testing.client import infer
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

ONE = {"x": np.ones((1, 1), np.float32)}


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the serving's scratch space goes, to see it removed; and a runtime directory of this test's own, where
    a serve leaves its key (repogen.server.client.access_key.runs_root), so no other run on the machine counts."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return temp


def test_an_app_served_in_process_reloads_on_request_and_leaves_nothing(
    triton_install: TritonInstallation, tmp_path: Path, temp_dir: Path
) -> None:
    app = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "apps" / "reload", app)
    lines: list[str] = []
    runs = runs_root()  # a runtime directory of this test's own (temp_dir): another serve's keys are elsewhere
    assert not runs.exists()
    serving = triton_install.serving(f"{app / 'app.py'}:models", echo=lines.append, reload=True)
    assert serving.status().running is False
    with serving:
        server = serving.server
        assert server is not None
        status = serving.status()
        assert status.running and status.pid == server.pid and status.http_url == server.http_url
        assert [(m.name, m.state) for m in status.models] == [("Edited", "READY"), ("Stable", "READY")]
        assert lines[0] == f"Building {app / 'app.py'}:models into {serving.repository}..."
        assert len(_scratch(temp_dir)) == 1  # the app built, the server's log
        # where repogen's commands find the key: this process's file for this server, and nothing else
        assert [p.name for p in runs.iterdir()] == [f"serve-{os.getpid()}-{server.pid}.json"]
        assert infer("http", server, "Edited", ONE)["y"].tolist() == [[2.0]]
        stable_stubs = _stubs(server.pid, "Stable")

        (app / "edited.py").write_text((app / "edited.py").read_text().replace("x + 1", "x + 100"))
        mark = len(lines)
        serving.reload()
        assert infer("http", server, "Edited", ONE)["y"].tolist() == [[101.0]]
        assert any(line.startswith("Reload: Edited reloaded in ") for line in lines[mark:]), lines[mark:]
        assert _stubs(server.pid, "Stable") == stable_stubs  # unchanged: not reloaded
        pid = server.pid
    assert serving.status().running is False
    assert group_pids(pid) == []
    assert _scratch(temp_dir) == []
    assert list(runs.iterdir()) == []


def test_a_mistake_is_named_and_leaves_nothing(triton_install: TritonInstallation, temp_dir: Path) -> None:
    serving = triton_install.serving(f"{ROOT / 'tests' / 'apps' / 'reload' / 'app.py'}:models", models=("Nope",))
    with pytest.raises(RepogenError, match=r"--model Nope: no such model in .*; its models are Edited, Stable\."):
        serving.start()
    assert _scratch(temp_dir) == []  # no server ran: no log to keep
    with pytest.raises(ServeError, match=r"^1 model\(s\) failed to load \(tracebacks in the log, \S+\)") as caught:
        triton_install.serving(f"{ROOT / 'tests' / 'apps' / 'broken' / 'app.py'}:models").start()
    assert "Broken (version 1): RuntimeError: weights file missing (at app.py(23): __init__)" in str(caught.value)
    (scratch,) = _scratch(temp_dir)  # the log the error names stays, alone
    assert [p.name for p in scratch.iterdir()] == ["tritonserver.log"] and str(scratch) in str(caught.value)
    shutil.rmtree(scratch)
    with pytest.raises(UsageError, match="--reload, --output and --app-dir rebuild from an app"):
        triton_install.serving(temp_dir, reload=True)


def test_reload_needs_an_app_served_with_reload(triton_install: TritonInstallation, cli_build, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    cli_build("examples/quickstart/app.py:models", repo)
    with triton_install.serving(repo, restrict=()) as serving:
        assert serving.server is not None and serving.server.access is None  # restrict=(): every API open
        with pytest.raises(UsageError, match=r"reload rebuilds an app served with --reload; '.*repo' is served"):
            serving.reload()
        a = np.ones((1, 2), np.float32)
        assert infer("grpc", serving.server, "AddSub", {"a": a, "b": a})["add"].tolist() == [[2.0, 2.0]]
    with pytest.raises(ServeError, match="this Serving has served already"):
        serving.start()


def _scratch(temp: Path) -> list[Path]:
    return sorted(temp.glob("repogen-serve-*"))


def _stubs(pgid: int, model: str) -> list[int]:
    """The backend stub processes of ``model``'s instances (their command lines name ``<model>_0_<n>``)."""
    return [pid for pid in group_pids(pgid) if f"{model}_0_".encode() in Path(f"/proc/{pid}/cmdline").read_bytes()]
