"""``repogen serve APP`` removes its scratch directory however it ends: here, Ctrl+C while the app is being built.

Ctrl+C in a terminal reaches the whole foreground process group: serve and the ``repogen build`` it runs.
No server is needed: the build comes before any server is chosen or started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

APP = """\
import os, time
from pathlib import Path

Path(os.environ["REPOGEN_TEST_BUILDING"]).write_text("importing")
time.sleep(120)
"""


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"])
def test_ctrl_c_during_the_build_leaves_no_scratch(tmp_path: Path, inherited: signal.Handlers) -> None:
    """Also when serve starts with SIGINT ignored (`repogen serve ... &` in a script, CI runners started so)."""
    (tmp_path / "slow_app.py").write_text(APP)
    temp, marker = tmp_path / "tmp", tmp_path / "building"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp), REPOGEN_TEST_BUILDING=str(marker))
    command = [sys.executable, "-m", "repogen", "serve", "slow_app.py:models",
               "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"]  # fmt: skip
    serve = subprocess.Popen(command, cwd=tmp_path, env=env, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert serve.poll() is None, serve.communicate()[0]
            assert time.monotonic() < deadline, "the build never imported the app"
            time.sleep(0.1)
        assert [p.name.startswith("repogen-serve-") for p in temp.iterdir()] == [True]
        os.killpg(serve.pid, signal.SIGINT)  # what Ctrl+C does: the whole foreground group
        output, _ = serve.communicate(timeout=60)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
    assert serve.returncode != 0, output
    assert "Building slow_app.py:models" in output
    assert list(temp.iterdir()) == [], output
