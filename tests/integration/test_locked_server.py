"""Locked by default: the admin APIs answer only requests carrying the access key, on the real server.

A server started as `repogen serve` starts it (PyTriton 0.7's set behind a key, explicit model control so
that load/unload exist) refuses each restricted API without the key with Triton's own status (HTTP 403,
gRPC UNAVAILABLE) and answers it with the key; health, metadata, model config and inference answer
without. repogen's own commands (status, load/unload, infer, perf) and the generated probes work against
it. The release under test decides HTTP: 2.39 has no ``--http-restricted-api``, so there every HTTP API
stays open (what `repogen serve` says, and why `repogen deploy` refuses 23.10).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import yaml
from serve_cli import ServeProcess, cli_env, repogen

from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import K8S_FILE
from repogen.server.client.access_key import Access, runs_root
from repogen.server.running.external import help_restricts
from repogen.server.running.process import TritonServer
from repogen.server.running.serve_options import explicit_arguments
from repogen.testing.api_probes import GRPC_CALLS, HTTP_CALLS, ask_grpc, ask_http
from repogen.testing.pytest_plugin import TritonInstallation
from repogen.testing.server_under_test import release_at_least
from repogen.triton.restricted_apis import APIS, DEFAULT_RESTRICTED, restricts_grpc, restricts_http

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

KEY = "test-key-36"


@pytest.fixture(scope="module")
def quickstart(cli_build: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("access") / "repo"
    cli_build("examples/quickstart/app.py:models", repo)
    return repo


def _start(install: TritonInstallation, repo: Path, log: Path, apis: tuple[str, ...]) -> Iterator[TritonServer]:
    server = install.server(
        repo, log_path=log, access=Access(KEY, apis), extra_args=explicit_arguments(["AddSub", "Shout"])
    )
    server.start()
    try:
        server.wait_ready(120)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def locked(triton_install: TritonInstallation, quickstart: Path, tmp_path_factory: pytest.TempPathFactory):
    """The default: PyTriton 0.7's set behind the key."""
    yield from _start(triton_install, quickstart, tmp_path_factory.mktemp("locked") / "log", DEFAULT_RESTRICTED)


@pytest.fixture(scope="module")
def everything(triton_install: TritonInstallation, quickstart: Path, tmp_path_factory: pytest.TempPathFactory):
    """Every group behind the key, health and inference included."""
    yield from _start(triton_install, quickstart, tmp_path_factory.mktemp("all") / "log", APIS)


def test_the_release_lists_the_flags_repogen_uses(triton_install: TritonInstallation) -> None:
    release = triton_install.install.release
    listed = help_restricts(triton_install.install.binary, triton_install.server(".").environment())
    assert listed == {"http": restricts_http(release.version), "grpc": restricts_grpc(release.version)}
    assert listed["http"] == release_at_least("2.40.0")


def test_each_restricted_api_is_refused_over_http_without_the_key(locked: TritonServer) -> None:
    for api in HTTP_CALLS:
        status, body = ask_http(locked.http_url, api)
        if api in DEFAULT_RESTRICTED and release_at_least("2.40.0"):
            assert (status, json.loads(body)) == (
                403, {"error": "This API is restricted, expecting header 'triton-access-token'"}
            ), api  # fmt: skip
        else:  # open by default; on 2.39 everything over HTTP (no --http-restricted-api)
            assert status == 200, (api, body)
        assert ask_http(locked.http_url, api, KEY)[0] == 200, api
    wrong = ask_http(locked.http_url, "model-repository", "not-it")[0]
    assert wrong == (403 if release_at_least("2.40.0") else 200)


def test_each_restricted_api_is_refused_over_grpc_without_the_key(locked: TritonServer) -> None:
    for api in GRPC_CALLS:
        answer = ask_grpc(locked.grpc_url, api)
        if api in DEFAULT_RESTRICTED:
            assert answer == (
                "StatusCode.UNAVAILABLE: This protocol is restricted, expecting header "
                "'triton-grpc-protocol-triton-access-token'"
            ), api
        else:
            assert answer == "OK", api
        assert ask_grpc(locked.grpc_url, api, KEY) == "OK", api
    assert ask_grpc(locked.grpc_url, "statistics", "not-it").startswith("StatusCode.UNAVAILABLE")


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return repogen(*args, env=cli_env(**{"REPOGEN_ACCESS_TOKEN": "", **env}))


def test_status_load_unload_and_infer_with_the_key(locked: TritonServer) -> None:
    for protocol, url in (("http", locked.http_url), ("grpc", locked.grpc_url)):
        where = ("--url", url, "--protocol", protocol)
        done = _cli("status", *where, "--access-token", KEY)
        assert done.returncode == 0 and "AddSub  1        READY" in done.stdout, done.stderr
        assert _cli("unload", "Shout", *where, REPOGEN_ACCESS_TOKEN=KEY).stdout.startswith("Shout (version 1): UNAV")
        assert _cli("load", "Shout", *where, "--access-token", KEY).stdout.startswith("Shout (version 1): READY")
        infer = _cli("infer", "AddSub", "-i", "a=[[1]]", "-i", "b=[[2]]", *where, "--json")  # needs no key
        assert json.loads(infer.stdout)["outputs"][0]["data"] == [[3.0]], infer.stderr
        if protocol == "http" and not release_at_least("2.40.0"):
            continue  # 2.39's HTTP restricts nothing
        refused = _cli("status", *where)
        assert refused.returncode == 1
        assert f"Error: the server at {url} keeps this API behind an access key and none was sent (" in refused.stderr
        assert "Pass --access-token KEY or set $REPOGEN_ACCESS_TOKEN" in refused.stderr
        wrong = _cli("unload", "Shout", *where, "--access-token", "not-it")
        assert wrong.returncode == 1 and f"the server at {url} refused the key from --access-token (" in wrong.stderr


def test_perf_sends_the_key(locked: TritonServer) -> None:
    """perf_analyzer reads the server's statistics, which need the key: sent with -H in each protocol's header."""
    measured = _cli("perf", "AddSub", "--url", locked.grpc_url, "--protocol", "grpc", "--access-token", KEY,
                    "--measurement-interval", "300", "--", "--stability-percentage=100")  # fmt: skip
    assert measured.returncode == 0 and "throughput" in measured.stdout, measured.stdout + measured.stderr
    if release_at_least("2.40.0"):  # 2.39's HTTP statistics are open: perf_analyzer measures without
        refused = _cli("perf", "AddSub", "--url", locked.http_url, "--measurement-interval", "300")
        assert refused.returncode == 1
        assert "keeps this API behind an access key and none was sent" in refused.stderr, refused.stderr
        assert KEY not in refused.stderr


def _probe_commands(repo: Path) -> dict[str, list[str]]:
    files = generate(repo, DeployOptions(k8s=True, restrict=APIS)).files
    (container,) = next(yaml.safe_load_all(files[K8S_FILE]))["spec"]["template"]["spec"]["containers"]
    return {probe: container[probe]["exec"]["command"] for probe in ("livenessProbe", "readinessProbe")}


def test_inference_restricted_too_the_probes_and_infer_carry_the_key(
    everything: TritonServer, quickstart: Path, triton_install: TritonInstallation
) -> None:
    """--restrict all: the generated liveness (inference) and readiness (health) probes send the key from the
    container's environment; `repogen infer` takes it like the others."""
    python = str(triton_install.venv.path / "bin" / "python")  # the image's python3
    for name, command in _probe_commands(quickstart).items():
        argv = [python, *command[1:3], f"http://{everything.http_url}", *command[4:]]
        ok = subprocess.run(argv, env={"REPOGEN_ACCESS_TOKEN": KEY}, capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0, (name, ok.stderr)
        refused = subprocess.run(argv, env={}, capture_output=True, text=True, timeout=60)
        if release_at_least("2.40.0"):
            assert refused.returncode == 1 and "HTTP 403" in refused.stderr, (name, refused.stderr)
        else:  # 2.39 cannot restrict HTTP (only gRPC): the probe's request needs no key there, and passes without
            assert refused.returncode == 0, (name, refused.stderr)
    where = ("--url", everything.grpc_url, "--protocol", "grpc")
    infer = _cli("infer", "AddSub", "-i", "a=[[1]]", "-i", "b=[[2]]", *where, "--json", "--access-token", KEY)
    assert json.loads(infer.stdout)["outputs"][1]["data"] == [[-1.0]], infer.stderr
    refused = _cli("infer", "AddSub", "-i", "a=[[1]]", "-i", "b=[[2]]", *where)
    assert refused.returncode == 1 and "keeps this API behind an access key" in refused.stderr, refused.stderr


def test_serve_prints_its_key_once_and_the_commands_find_it(
    quickstart: Path, triton_install: TritonInstallation, tmp_path: Path
) -> None:
    env = cli_env(REPOGEN_ACCESS_TOKEN="")
    serve = ServeProcess(quickstart, triton_install, env=env)
    try:
        key = serve.wait_for(r"^  access   (.*) need the header triton-access-token: (\S+)$")
        # this run's file (serve-<serve's pid>-<its server's pid>.json): other runs on the machine have their own
        (run_file,) = runs_root().glob(f"serve-{serve.proc.pid}-*.json")
        assert key[1] == ", ".join(DEFAULT_RESTRICTED)
        assert serve.output().count(key[2]) == 1  # printed once
        if not release_at_least("2.40.0"):
            serve.wait_for(r"^  open     over HTTP every API answers without the key: tritonserver 2.39.0 cannot")
        url = f"127.0.0.1:{serve.grpc}"
        found = repogen("status", "--url", url, "--protocol", "grpc", env=env)  # no key given: the run's file
        assert found.returncode == 0 and "AddSub" in found.stdout, found.stderr
        other_user = {**env, "XDG_RUNTIME_DIR": str(tmp_path)}  # where another user's runs would be
        elsewhere = repogen("status", "--url", url, "--protocol", "grpc", env=other_user)
        assert elsewhere.returncode == 1 and "none was sent" in elsewhere.stderr
    finally:
        assert serve.stop() == 0
    assert not list(runs_root().glob(f"serve-{serve.proc.pid}-*.json"))  # its file is gone with the run


def test_serve_restrict_none_leaves_every_api_open(quickstart: Path, triton_install: TritonInstallation) -> None:
    serve = ServeProcess(quickstart, triton_install, "--restrict", "none")
    try:
        serve.wait_for(r"^  access   nothing restricted \(--restrict none\)")
        with grpcclient.InferenceServerClient(f"127.0.0.1:{serve.grpc}") as client:
            assert len(client.get_model_repository_index().models) == 2
            assert {stats.name for stats in client.get_inference_statistics().model_stats} == {"AddSub", "Shout"}
    finally:
        serve.stop()
