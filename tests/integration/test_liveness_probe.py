"""The deployment files' liveness check fails when a model's stub is gone, and `repogen status` names it.

tritonserver 2.51 never restarts a dead stub and keeps /v2/health/ready at 200, so the Docker
HEALTHCHECK and the Kubernetes/KServe livenessProbe send each model a small real request
(repogen/deploy/probe.py). Here the generated command runs as the container would run it, with the
serving Python standing in for the image's ``python3``, against a real server: it passes while every
model answers; after one stub is SIGKILLed its next run fails on the server's answers (no request
waits out a timeout), naming the models that no longer answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import DOCKERFILE, K8S_FILE
from repogen.deploy.probe import FAILURES
from repogen.testing.server_under_test import pairing_under_test, release_at_least
from repogen.triton.known_issues import BLS_STREAM_UNANSWERED

_pairing = pairing_under_test()
#: Where the server now and then leaves a decoupled BLS stream unanswered (2.39), the test takes another branch:
#: a smoke test there, so that `make test` runs that branch on its 2.39 pairing (its full run is on 2.51).
_UNANSWERED = BLS_STREAM_UNANSWERED.affects(_pairing.release, _pairing.python)
pytestmark = [pytest.mark.integration, *([pytest.mark.smoke] if _UNANSWERED else [])]

ROOT = Path(__file__).resolve().parents[2]
FAST_EXIT = ("--exit-timeout-secs=5",)  # the killed stub (2.51) holds the shutdown for the whole timeout (30 s)


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory):
    path = tmp_path_factory.mktemp("liveness") / "model_repository"
    cli_build("examples/pipeline/app.py:models", path)
    return path


def _commands(repo: Path) -> tuple[list[str], list[str], int]:
    """The Kubernetes livenessProbe's command, the Dockerfile HEALTHCHECK's, and the probe period."""
    files = generate(repo, DeployOptions(docker=True, prebuilt=True, context=repo.parent, k8s=True)).files
    documents = list(yaml.safe_load_all(files[K8S_FILE]))
    (container,) = next(d for d in documents if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"]
    line = next(line for line in files[DOCKERFILE].splitlines() if line.startswith("HEALTHCHECK "))
    docker = json.loads(line.split(" CMD ", 1)[1])
    return container["livenessProbe"]["exec"]["command"], docker, container["livenessProbe"]["periodSeconds"]


def _probe(command: list[str], server, python: Path) -> tuple[int, str, float]:
    """Run the generated check as the container would: its python3 (here the serving venv's), its server."""
    assert command[0] == "python3" and command[3].startswith("http://127.0.0.1:")
    argv = [str(python), *command[1:3], f"http://{server.http_url}", *command[4:]]
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr, time.monotonic() - start


def _status(server) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "repogen", "status", "--url", server.http_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_probe_fails_within_its_period_once_a_stub_is_killed(repo, serve, triton_install):
    kubernetes, docker, _ = _commands(repo)
    assert docker == kubernetes  # one check, two files
    server = serve(repo, extra_args=FAST_EXIT)
    python = triton_install.venv.path / "bin" / "python"
    unanswered = _UNANSWERED

    # Healthy: every run passes. Where the server leaves a decoupled BLS stream unanswered now and then
    # (repogen.triton.known_issues), one run in FAILURES is enough, as the probes count failures in a row.
    runs = [_probe(kubernetes, server, python)[:2] for _ in range(FAILURES)]
    statuses = [_status(server) for _ in range(FAILURES)]
    if unanswered:
        assert (0, "") in runs, runs
        assert any("do not answer" not in text for text in statuses), statuses
    else:
        assert runs == [(0, "")] * FAILURES, runs
        assert [text for text in statuses if "do not answer" in text] == [], statuses

    (stub,) = [p for p in server.process_group_pids() if "/Tokenize/" in Path(f"/proc/{p}/cmdline").read_text()]
    os.kill(stub, signal.SIGKILL)  # a stub of the server this test started
    rc, err, took = _probe(kubernetes, server, python)
    # The first run after the kill fails, on the server's answers: no model timed out (a request that waits out
    # the probe's own timeout would take it past its period on a slow machine), so it fails within one period
    assert rc == 1, (rc, err, took)
    assert "Stub process 'Tokenize_0_0' is not healthy" in err  # 2.39/2.41 restart it after this request
    if not unanswered:
        assert "no answer (" not in err, err
    if release_at_least("2.51.0"):  # never restarted, still READY: only the probe and status see it
        assert "model 'Tokenize' does not answer: " in err
        assert "model 'Pipeline' does not answer" in err  # the ensemble whose first step it is
        with server.client() as client:
            assert client.is_server_ready()
        text = _status(server)
        assert "does not answer: " in text and "Tokenize" in text.splitlines()[-1]
        rc, _, _ = _probe(kubernetes, server, python)
        assert rc == 1
