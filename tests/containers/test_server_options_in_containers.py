"""The tritonserver options a repository depends on, in a container (tests/apps/server_options/app.py).

``repogen deploy --compose`` (the stock image, the repository mounted) starts tritonserver with what the build
recorded: identical requests reach the callable once, with Triton counting the cache hits, and the two instances
needing the one ``slot`` never execute at once. The README's used-by line (``tritonserver --model-repository=/models``
and nothing more) serves the same repository without them: each model logs the flag it lacks, and the instances run
together (the control). tests/integration/test_server_options_served.py serves it without a container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from runs import PREFIX, run_triton

from repogen.server.running.docker import Container, unique_name
from repogen.server.running.process import free_ports
from repogen.testing.option_checks import cached_calls, limited_spans, overlaps
from repogen.testing.scrape import scrape
from repogen.triton.releases import NEWEST

APP = "tests/apps/server_options/app.py:models"


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    out = tmp_path_factory.mktemp("server-options") / "model_repository"
    subprocess.run([sys.executable, "-m", "repogen", "build", APP, "-o", str(out)], check=True, capture_output=True)
    out.chmod(0o755)  # the container's uid 1000 reads it
    for path in out.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return out


@pytest.fixture(scope="module")
def composed(standin_image, docker_engine, repository):
    deploy = repository.parent / "deploy"
    subprocess.run([sys.executable, "-m", "repogen", "deploy", str(repository), "--compose", "--restrict", "none",
                    "-o", str(deploy)], check=True, capture_output=True)  # fmt: skip
    project = unique_name(f"{PREFIX}-server-options")
    http, grpc, metrics = free_ports(3)
    env = {**os.environ, "TRITON_IMAGE": standin_image(NEWEST.ngc).tag, "TRITON_HTTP_PORT": str(http),
           "TRITON_GRPC_PORT": str(grpc), "TRITON_METRICS_PORT": str(metrics)}  # fmt: skip
    compose = [shutil.which("docker-compose") or "docker-compose", "-p", project, "-f", str(deploy / "compose.yaml")]

    def run(*args: str) -> str:
        done = subprocess.run([*compose, *args], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"docker-compose {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    try:
        run("up", "-d")
        (name,) = run("ps", "-q").split()
        container = Container(docker_engine, name, {"http": http, "grpc": grpc, "metrics": metrics})
        container.wait_health("healthy", 300)
        yield container
    finally:
        run("down")


@pytest.fixture(scope="module")
def plain(standin_image, docker_engine, repository):
    with run_triton(docker_engine, standin_image(NEWEST.ngc).tag, repository, prefix="server-options-plain") as served:
        yield served.wait_ready(240)


def test_the_compose_file_starts_tritonserver_with_them(composed):
    command = " ".join(composed.inspect()["Config"]["Cmd"])
    assert "--cache-config=local,size=8388608 --rate-limit=execution_count" in command
    first = cached_calls("http", composed, 5.0)
    assert [cached_calls("grpc", composed, 5.0) for _ in range(4)] == [first] * 4
    hits = scrape(f"http://{composed.url('metrics')}/metrics").value("nv_cache_num_hits_per_model", model="Cached")
    assert hits == 4
    found = limited_spans(composed)
    assert overlaps(found) == [] and len({pid for _, _, pid in found}) == 2, found


def test_the_used_by_line_without_them_names_each_flag(plain):
    logs = plain.logs()
    assert "model 'Cached': tritonserver was started without --cache-config=local,size=8388608: " in logs
    assert "model 'Limited': tritonserver was started without --rate-limit=execution_count: " in logs
    assert overlaps(limited_spans(plain)) != []  # the control: without the rate limiter both instances run at once
