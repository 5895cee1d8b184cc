"""A server whose Python has numpy 2 beside a backend stub built for numpy 1 (NGC 23.10-24.10, every PyPI wheel).

There every numpy output fails in the server with "output tensor shape does not match size of output"; a
model refuses to load instead, with one line naming both and the fix. A stock container (numpy 1.26.4, the
server venvs of every other test) is not touched: the suite serves on one."""

from __future__ import annotations

import pytest

from repogen.server.provision.install import ensure_server_venv, venv_info
from repogen.server.provision.pythons import require_python
from repogen.server.running.process import TritonServer

pytestmark = [pytest.mark.integration, pytest.mark.smoke]

NUMPY2 = "2.2.6"  # the newest numpy with wheels for Python 3.10 to 3.13


@pytest.fixture(scope="module")
def numpy2_server(triton_install, repogen_cache_dir, cli_build, tmp_path_factory):
    python = require_python(triton_install.venv.python_version)
    venv = venv_info(ensure_server_venv(python=python, numpy=NUMPY2, cache_dir=repogen_cache_dir))
    repo = tmp_path_factory.mktemp("numpy2") / "repo"
    cli_build("examples/quickstart/app.py:models", repo)
    log = tmp_path_factory.mktemp("server") / "tritonserver.log"
    server = TritonServer(
        repo,
        triton_install.install,
        venv,
        log_path=log,
        extra_args=["--exit-on-error=false", "--strict-readiness=false"],
    )
    server.start()
    try:
        server.wait_ready(120)
        yield server
    finally:
        server.stop()


def test_every_model_refuses_numpy_2_naming_both_and_the_fix(numpy2_server):
    states = {m["name"]: (m.get("state"), m.get("reason", "")) for m in numpy2_server.models_status()}
    assert set(states) == {"AddSub", "Shout"}
    for name, (state, reason) in states.items():
        assert state == "UNAVAILABLE"
        assert f"PayloadError: model '{name}' cannot serve with numpy {NUMPY2} in the server's Python: this " in reason
        assert "backend stub (" in reason and ") is built for numpy 1 (as NGC 23.10-24.10's are)" in reason
        assert "Give the server's Python numpy 1 (NGC's containers pin numpy<2: `pip install 'numpy<2'`)" in reason
    assert numpy2_server.is_running()
