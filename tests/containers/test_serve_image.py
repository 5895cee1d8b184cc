"""`repogen serve --image IMAGE` serves in a container instead of the embedded server.

The user's own NGC image is what production runs; here its stand-in. `repogen serve` runs it as the
deployment files do (the repository mounted read-only, uid 1000, ``--shm-size`` computed from the
repository, ports on 127.0.0.1) and keeps its own behaviour: the banner with the endpoints and two
requests that work as printed, ``--reload`` rebuilding an app and reloading the changed model in the
running container, and Ctrl+C stopping it (the container removed, exit status 0).
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from runs import ROOT

from repogen.server.running.process import free_ports
from repogen.testing.client import infer

APP = """
import numpy as np
from scale import FACTOR

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def scale(x):
    return {"y": x * FACTOR}


models.bind("Scale", infer_func=scale, inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))], config=ModelConfig(max_batch_size=8))
"""


class Serve:
    """``repogen serve ... --image IMAGE`` in a subprocess, its output collected line by line."""

    def __init__(self, *args: str, cwd=ROOT):
        self.http, self.grpc, self.metrics = free_ports(3)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "repogen", "serve", *args, "--http-port", str(self.http), "--grpc-port",
             str(self.grpc), "--metrics-port", str(self.metrics)],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        )  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(line.rstrip("\n") for line in self.proc.stdout))
        self.reader.start()

    @property
    def http_url(self):
        return f"127.0.0.1:{self.http}"

    @property
    def grpc_url(self):
        return f"127.0.0.1:{self.grpc}"

    def wait_for(self, pattern: str, timeout: float = 240, after: int = 0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines[after:]):
                if match := re.search(pattern, line):
                    return match
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.lines[-60:]))

    def stop(self) -> tuple[int, float]:
        start = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.reader.join(10)
        return code, time.monotonic() - start


def _container(docker_engine, port):
    ids = docker_engine("ps", "-q", "--filter", f"publish={port}").stdout.split()
    assert len(ids) == 1, ids
    return docker_engine.inspect("container", ids[0])


def test_a_repository_served_in_an_image_banner_requests_and_ctrl_c(standin_image, docker_engine, built):
    image = standin_image("24.10")
    repository = built("examples/quickstart/app.py:models")
    serve = Serve(str(repository), "--image", image.tag)
    try:
        banner = serve.wait_for(rf"tritonserver 2\.51\.0 in {re.escape(image.tag)} ready \(pid \d+\), serving 2 model")
        assert banner and serve.wait_for(r"Press Ctrl\+C to stop\.")
        container = _container(docker_engine, serve.http)
        host = container["HostConfig"]
        assert container["Config"]["User"] == "1000:1000" and host["ShmSize"] == 64 << 20
        assert [(m["Source"], m["Destination"], m["RW"]) for m in container["Mounts"]] == [
            (str(repository), "/models", False)]  # fmt: skip
        assert {b["HostIp"] for bindings in host["PortBindings"].values() for b in bindings} == {"127.0.0.1"}
        printed = next(line.strip() for line in serve.lines if line.strip().startswith("repogen infer "))
        done = subprocess.run(
            [sys.executable, "-m", *shlex.split(printed)], capture_output=True, text=True, timeout=60
        )  # fmt: skip  (the line `repogen serve` printed, as it is)
        assert done.returncode == 0 and "add" in done.stdout, done.stdout + done.stderr
        a = np.array([[1.0, 2.0]], dtype=np.float32)
        assert infer("grpc", serve, "AddSub", {"a": a, "b": a})["add"].tolist() == [[2.0, 4.0]]
        status = subprocess.run([sys.executable, "-m", "repogen", "status", "--url", serve.http_url],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert status.returncode == 0 and "AddSub" in status.stdout, status.stderr  # statistics: behind the key
    finally:
        code, seconds = serve.stop()
    print(f"Ctrl+C stopped the container in {seconds:.1f} s")
    assert code == 0 and "tritonserver stopped." in serve.lines, serve.lines[-20:]
    assert not docker_engine("ps", "-aq", "--filter", f"name={container['Name'].lstrip('/')}").stdout.strip()


def test_reload_rebuilds_the_app_and_reloads_it_in_the_running_container(standin_image, docker_engine, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "scale.py").write_text("FACTOR = 2.0\n")
    serve = Serve("app.py:models", "--reload", "--image", standin_image("24.10").tag, cwd=tmp_path)
    try:
        serve.wait_for(r"Press Ctrl\+C to stop\.")
        x = np.array([[1.0, 3.0]], dtype=np.float32)
        assert infer("http", serve, "Scale", {"x": x})["y"].tolist() == [[2.0, 6.0]]
        after = len(serve.lines)
        (tmp_path / "scale.py").write_text("FACTOR = 3.0\n")
        serve.wait_for(r"Reload: Scale reloaded in", after=after)
        assert infer("grpc", serve, "Scale", {"x": x})["y"].tolist() == [[3.0, 9.0]]
        mounts = _container(docker_engine, serve.http)["Mounts"]
        assert [(m["Destination"], m["RW"]) for m in mounts] == [("/repogen", False)]  # the parent: builds swap it
    finally:
        code, _ = serve.stop()
    assert code == 0, serve.lines[-20:]


@pytest.mark.parametrize("flag", [["--embedded"], ["--triton-release", "24.10"], ["--tritonserver", "/bin/true"]])
def test_image_and_a_local_server_are_one_or_the_other(flag):
    done = subprocess.run([sys.executable, "-m", "repogen", "serve", "examples/quickstart/app.py:models", "--image",
                           "x", *flag], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "Pass one or the other" in done.stderr
