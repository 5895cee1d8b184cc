"""PyTriton's ``server.py`` after the import swap, on the real server: ``with Triton(config=TritonConfig(...)) as
triton: triton.bind(...); triton.serve()`` builds its models and serves them on the stock tritonserver
``repogen serve`` runs, answers over HTTP and gRPC, and on Ctrl+C (or SIGTERM) exits 0 leaving no server process and no
temporary directory; ``run()``/``stop()`` do the same in this process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from serve_cli import Output, cli_env, group_pids

from repogen import ModelConfig, Tensor, Triton, TritonConfig, TritonSecurityConfig, batch
from repogen.server.running.host import free_ports, pid_alive
from repogen.testing.api_probes import ask_grpc, ask_http
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.pytest_plugin import TritonInstallation
from repogen.triton.restricted_apis import GRPC_REFUSAL, HTTP_REFUSAL, restricts_http

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "apps" / "pytriton_style" / "server.py"
READY = re.compile(r"tritonserver \S+ ready \(pid (\d+)\)")


def _endpoints(http: int, grpc: int) -> SimpleNamespace:
    return SimpleNamespace(http_url=f"127.0.0.1:{http}", grpc_url=f"127.0.0.1:{grpc}")


class _Script(Output):
    """``python server.py --http-port P --grpc-port Q``."""

    def __init__(self, install: TritonInstallation, tmp: Path, ignore_sigint: bool = False) -> None:
        self.http, self.grpc, metrics = free_ports(3)
        release, python = install.install.release.tritonserver, install.venv.python_version
        cmd = [
            sys.executable, str(SERVER), "--http-port", str(self.http), "--grpc-port", str(self.grpc),
            "--metrics-port", str(metrics), "--triton-release", release, "--server-python", python,
        ]  # fmt: skip
        env = cli_env(TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        # `python server.py &` in a script starts it with SIGINT ignored: Ctrl+C (kill -INT) must stop it all the same
        ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
        super().__init__(
            subprocess.Popen(
                cmd,
                cwd=tmp,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                preexec_fn=ignore,
            )  # fmt: skip
        )

    def server_pid(self, timeout: float = 120.0) -> int:
        try:
            return int(self.wait_for(READY.pattern, timeout)[1])
        except AssertionError:
            raise AssertionError("server.py never said it was ready:\n" + self.output()) from None


def _check_answers(http: int, grpc: int) -> None:
    server = _endpoints(http, grpc)
    a, b = np.array([[1.0, 2.0, 3.0]], np.float32), np.array([[0.5, 0.5, 4.0]], np.float32)
    data = np.array([[1.0, -2.0]], np.float32)
    for protocol in PROTOCOLS:
        answer = infer(protocol, server, "AddSub", {"a": a, "b": b})
        np.testing.assert_array_equal(answer["add"], a + b)
        np.testing.assert_array_equal(answer["sub"], a - b)
        np.testing.assert_array_equal(infer(protocol, server, "Identity", {"data": data})["identity"], data)
        scaled = infer(protocol, server, "Identity", {"data": data, "scale": np.array([[3.0]], np.float32)})
        np.testing.assert_array_equal(scaled["identity"], data * 3)


@pytest.mark.parametrize(
    ("stop", "ignored"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["SIGINT", "SIGINT inherited ignored", "SIGTERM"],
)
def test_server_py_serves_until_ctrl_c(
    triton_install: TritonInstallation, tmp_path: Path, stop: int, ignored: bool
) -> None:
    script = _Script(triton_install, tmp_path, ignored)
    server_pid = None
    try:
        server_pid = script.server_pid()
        assert list(tmp_path.iterdir()), "the build and the server's scratch live under TMPDIR while it serves"
        if stop == signal.SIGINT and not ignored:  # once is enough: the other runs check the stop alone
            _check_answers(script.http, script.grpc)
        script.proc.send_signal(stop)
        code = script.proc.wait(60)
    finally:
        if script.proc.poll() is None:
            script.proc.kill()
            script.proc.wait()
        if server_pid is not None and pid_alive(server_pid):  # what a failed stop left: never outlives the test
            os.killpg(server_pid, signal.SIGKILL)
    script._reader.join(10)
    output = script.output()
    assert code == 0, output
    assert not pid_alive(server_pid) and not group_pids(server_pid), output
    # the build and serve's scratch are gone; the per-user directory where runs leave their key stays, empty
    runs = tmp_path / f"repogen-{os.getuid()}"
    assert [p for p in tmp_path.iterdir() if p != runs] == [] and not any(runs.glob("*")), output
    assert "Stopped" in script.lines[-1], output
    # the server's log comes out through logging, as the callables' prints would
    assert any("repogen.triton.server" in line and "successfully loaded 'AddSub'" in line for line in script.lines)


@batch
def _double(x):
    return {"y": x * 2}


@pytest.mark.parametrize("ports", ["config", "environment"])
def test_run_and_stop_in_process(triton_install: TritonInstallation, ports: str, monkeypatch) -> None:
    """The ports given in the config, or (as PyTriton reads them) in ``PYTRITON_TRITON_CONFIG_*`` variables."""
    http, grpc, metrics = free_ports(3)
    config = TritonConfig(http_port=http, grpc_port=grpc, metrics_port=metrics)
    if ports == "environment":
        for name, port in (("HTTP_PORT", http), ("GRPC_PORT", grpc), ("METRICS_PORT", metrics)):
            monkeypatch.setenv(f"PYTRITON_TRITON_CONFIG_{name}", str(port))
        config = None
    release, python = triton_install.install.release.tritonserver, triton_install.venv.python_version
    with Triton(config=config, triton_release=release, server_python=python) as triton:
        triton.bind(
            model_name="Double",
            infer_func=_double,
            inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=8),
        )
        assert not triton.is_alive()
        triton.run()
        launched = triton._served
        assert launched is not None and launched.serving is not None and launched.serving.server is not None
        server_pid, directory = launched.serving.server.pid, launched.directory
        assert triton.is_alive() and directory.is_dir()
        x = np.array([[1.5, -4.0]], np.float32)
        for protocol in PROTOCOLS:
            np.testing.assert_array_equal(infer(protocol, _endpoints(http, grpc), "Double", {"x": x})["y"], x * 2)
        assert triton.stop() is True
        assert not triton.is_alive() and triton.stop() is False
    assert not pid_alive(server_pid) and not group_pids(server_pid)
    assert not directory.exists()


@batch
def _add_sub(a, b):
    return {"add": a + b, "sub": a - b}


def test_a_security_config_guards_the_endpoints_it_names_with_its_key(triton_install: TritonInstallation) -> None:
    """PyTriton 0.7's deploy guide: ``Triton(security_config=TritonSecurityConfig(access_token=...,
    restricted_endpoints=[...]))`` keeps those endpoints behind the key (PyTriton's header) and leaves the others
    open; ``get_access_token()`` says the key. Here inference is among them, as the guide's production set has it."""
    http, grpc, metrics = free_ports(3)
    release = triton_install.install.release
    security = TritonSecurityConfig(access_token="my-token-12345", restricted_endpoints=["statistics", "inference"])
    with Triton(
        config=TritonConfig(http_port=http, grpc_port=grpc, metrics_port=metrics),
        security_config=security,
        triton_release=release.tritonserver,
        server_python=triton_install.venv.python_version,
    ) as triton:
        scalar = {"dtype": np.float32, "shape": (1,)}
        triton.bind(
            model_name="AddSub",
            infer_func=_add_sub,
            inputs=[Tensor(name="a", **scalar), Tensor(name="b", **scalar)],
            outputs=[Tensor(name="add", **scalar), Tensor(name="sub", **scalar)],
            config=ModelConfig(max_batch_size=8),
        )
        triton.run()
        key = triton.get_access_token()
        assert key == "my-token-12345"
        http_url, grpc_url = f"127.0.0.1:{http}", f"127.0.0.1:{grpc}"
        for api in ("statistics", "inference"):
            if restricts_http(release.version):  # 2.39 has no --http-restricted-api
                status, body = ask_http(http_url, api)
                assert status == 403 and HTTP_REFUSAL in body, (api, status, body)
            assert ask_http(http_url, api, key)[0] == 200, api
            refused = ask_grpc(grpc_url, api)
            assert refused.startswith("StatusCode.UNAVAILABLE") and GRPC_REFUSAL in refused, (api, refused)
            assert ask_grpc(grpc_url, api, key) == "OK", api
        for api in ("health", "model-repository", "model-config"):  # PyTriton's default set is not restricted here
            assert ask_http(http_url, api)[0] == 200 and ask_grpc(grpc_url, api) == "OK", api
