"""`repogen serve` + `repogen infer` as a user runs them: subprocesses, real tritonserver, ^C.

Serve the built quickstart, wait for the "ready" line, query it with `repogen infer` over HTTP
and gRPC and with the printed curl request, then SIGINT: the serve process, tritonserver and
every backend stub must be gone. Then the edges of the everyday loop: a restart on the same ports
while the last run's sockets are in TIME-WAIT, a port given twice, a model that fails to load, a
subset of models, arguments passed through to tritonserver.
"""

from __future__ import annotations

import json
import shlex
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import tritonclient.grpc
import tritonclient.http
from serve_cli import ServeProcess, group_pids, repogen, time_wait_ports

from repogen.server.running.process import free_ports, pid_alive
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def quickstart_repo(cli_build: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("serve") / "repo"
    cli_build("examples/quickstart/app.py:models", repo)  # type: ignore[operator]
    return repo


@pytest.fixture
def served(quickstart_repo: Path, triton_install: TritonInstallation) -> Iterator[ServeProcess]:
    """A `repogen serve` of the pairing under test, reusing the test cache (triton_install installed it)."""
    serve = ServeProcess(quickstart_repo, triton_install)
    try:
        yield serve
    finally:
        serve.stop()


def _infer(serve: ServeProcess, protocol: str, *args: str) -> tuple[int, str, str]:
    port = serve.http if protocol == "http" else serve.grpc
    result = repogen(
        "infer", "AddSub", "--input", "a=[[1,2]]", "--input", "b=[[3,4]]", "--url", f"127.0.0.1:{port}",
        "--protocol", protocol, *args,
    )  # fmt: skip
    return result.returncode, result.stdout, result.stderr


def test_serve_infer_and_stop_on_sigint(served: ServeProcess) -> None:
    ready = served.wait_for(r"ready \(pid (\d+)\)")
    server_pid = int(ready[1])
    assert pid_alive(server_pid)
    stubs = [p for p in group_pids(server_pid) if p != server_pid]
    assert len(stubs) >= 2  # one stub per model instance, in the server's process group
    out = served.output()
    assert f"Serving with tritonserver {served.release} + Python {served.python} (" in out
    assert f"http://127.0.0.1:{served.http}" in out and f"127.0.0.1:{served.grpc}" in out
    assert "AddSub, Shout" in out

    for protocol in ("http", "grpc"):
        code, stdout, stderr = _infer(served, protocol)
        assert code == 0, stderr
        assert "add  FP32  shape [1, 2]" in stdout and "[[4., 6.]]" in stdout
        assert "[[-2., -2.]]" in stdout
        assert stdout.index("add  FP32") < stdout.index("sub  FP32")  # the declared order
        code, stdout, _ = _infer(served, protocol, "--json")
        outputs = {o["name"]: o["data"] for o in json.loads(stdout)["outputs"]}
        assert outputs == {"add": [[4.0, 6.0]], "sub": [[-2.0, -2.0]]}

    # The printed curl is a real request: send its body.
    curl = served.wait_for(r"^\s+(curl -s \S+/v2/models/AddSub/infer -d .*)$")[1]
    argv = shlex.split(curl)
    body = argv[argv.index("-d") + 1].encode()
    with urllib.request.urlopen(urllib.request.Request(f"http://{argv[2]}", data=body), timeout=30) as response:
        reply = json.loads(response.read())
    assert {o["name"]: o["data"] for o in reply["outputs"]} == {"add": [2.0], "sub": [0.0]}

    # The server log streams to stdout.
    assert any("successfully loaded 'AddSub'" in line for line in served.lines)

    assert served.stop() == 0
    served.wait_for(r"tritonserver stopped\.")
    assert not pid_alive(server_pid)
    assert group_pids(server_pid) == []
    assert not any(pid_alive(p) for p in stubs)


def test_serve_stops_on_sigterm(served: ServeProcess) -> None:
    import signal

    server_pid = int(served.wait_for(r"ready \(pid (\d+)\)")[1])
    served.proc.send_signal(signal.SIGTERM)
    assert served.wait_exit(60) == 0
    assert group_pids(server_pid) == [] and not pid_alive(server_pid)


def test_infer_names_a_missing_model_and_input(served: ServeProcess) -> None:
    served.wait_for(r"ready \(pid \d+\)")
    url = f"127.0.0.1:{served.http}"
    result = repogen("infer", "--url", url, "Nope", "-i", "a=1")
    assert result.returncode == 1
    assert "model 'Nope' is not available" in result.stderr and "served models: AddSub, Shout" in result.stderr
    result = repogen("infer", "--url", url, "AddSub", "-i", "a=1")
    assert result.returncode == 1 and "needs input(s) b" in result.stderr


def test_restart_on_the_same_ports_at_once(quickstart_repo: Path, triton_install: TritonInstallation) -> None:
    """Stop with clients connected (the server closes first: its ports keep TIME-WAIT sockets), start again."""
    ports = tuple(free_ports(3))
    first = ServeProcess(quickstart_repo, triton_install, ports=ports)  # type: ignore[arg-type]
    try:
        first.wait_for(r"ready \(pid \d+\)")
        http = tritonclient.http.InferenceServerClient(f"127.0.0.1:{ports[0]}")
        grpc = tritonclient.grpc.InferenceServerClient(f"127.0.0.1:{ports[1]}")
        assert http.is_model_ready("AddSub") and grpc.is_model_ready("AddSub")  # connections stay open
        assert first.stop() == 0
        http.close()
        grpc.close()
    finally:
        first.stop()
    assert {ports[0], ports[1]} & time_wait_ports(), "the stopped server left no TIME-WAIT socket to restart past"
    second = ServeProcess(quickstart_repo, triton_install, ports=ports)  # type: ignore[arg-type]
    try:
        second.wait_for(r"ready \(pid \d+\)", timeout=120)
        assert "not available" not in second.output()
    finally:
        second.stop()


def test_a_port_given_twice_is_refused_before_starting(quickstart_repo: Path) -> None:
    (port,) = free_ports(1)
    result = repogen("serve", str(quickstart_repo), "--http-port", str(port), "--grpc-port", str(port))
    assert result.returncode == 2
    assert f"--http-port and --grpc-port are both {port}; each endpoint needs its own port" in result.stderr
    assert "Usage: tritonserver" not in result.stdout + result.stderr


def test_a_failed_model_ends_the_output_with_its_error(
    tmp_path: Path, cli_build: object, triton_install: TritonInstallation
) -> None:
    repo = tmp_path / "broken"
    cli_build("tests/apps/broken/app.py:models", repo)  # type: ignore[operator]
    serve = ServeProcess(repo, triton_install)
    try:
        assert serve.wait_exit(180) == 1
    finally:
        serve.stop()
    tail = serve.lines[-2:]
    assert tail[0].startswith("Error: 1 model(s) failed to load (tracebacks in the log above, also in ")
    assert tail[1] == "  Broken (version 1): RuntimeError: weights file missing (at app.py(23): __init__)"
    assert serve.lines.count("tritonserver stopped.") == 0 and "Traceback" not in "\n".join(serve.lines[-3:])


def test_a_model_subset_and_tritonserver_arguments(quickstart_repo: Path, triton_install: TritonInstallation) -> None:
    serve = ServeProcess(quickstart_repo, triton_install, "--model", "Shout", "--", "--log-info=false")
    try:
        serve.wait_for(r"ready \(pid \d+\), serving 1 model\(s\) from .*: Shout$")
        serve.wait_for(r"not loaded \(--model picks\): AddSub")
        assert not any("successfully loaded" in line for line in serve.lines)  # --log-info=false reached it
        result = repogen("infer", "Shout", "-i", "text=hi", "--url", f"127.0.0.1:{serve.http}")
        assert result.returncode == 0 and '[["HI!"]]' in result.stdout
        result = repogen("infer", "AddSub", "-i", "a=1", "-i", "b=1", "--url", f"127.0.0.1:{serve.http}")
        assert result.returncode == 1 and "model 'AddSub' is not available" in result.stderr
    finally:
        assert serve.stop() == 0


def test_refused_arguments(quickstart_repo: Path, triton_install: TritonInstallation) -> None:
    result = repogen("serve", str(quickstart_repo), "--", "--http-port=9")
    assert result.returncode == 2
    assert "repogen serve sets --http-port itself; use --http-port instead" in result.stderr
    result = repogen("serve", str(quickstart_repo), "--model", "Nope")
    assert result.returncode == 1 and "--model Nope: no such model in" in result.stderr
    assert "its models are AddSub, Shout" in result.stderr
    serve = ServeProcess(quickstart_repo, triton_install, "--", "--no-such-option=1")
    try:
        assert serve.wait_exit(120) == 1
    finally:
        serve.stop()
    out = serve.output()
    assert "Usage: tritonserver" not in out and "--help" not in out  # its ~300 lines of usage stay out
    assert "tritonserver exited with code 1 before starting" in out
    assert "unrecognized option '--no-such-option=1'" in out
