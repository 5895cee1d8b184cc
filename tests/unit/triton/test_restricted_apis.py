"""The access key: which APIs need it, how servers get it and clients find it, what deployments write.

The real server's answers are tests/integration/test_locked_server.py's; here what repogen writes and decides.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.deploy import DeployOptions, generate
from repogen.deploy import probe_check as check_module
from repogen.deploy.files import DOCKERFILE, K8S_FILE, KSERVE_FILE
from repogen.errors import UsageError
from repogen.server.client.access_key import Access, KeyedClient, find_token, forget_run, record_run, runs_dir
from repogen.server.client.perf import PerfOptions, perf_command
from repogen.server.running.banner import sample_curl
from repogen.server.running.external import help_restricts
from repogen.server.running.serve_options import check_passthrough
from repogen.triton import restricted_apis as access
from repogen.triton.releases import RELEASES

ROOT = Path(__file__).resolve().parents[3]
DEFAULT = "shared-memory,model-repository,statistics,trace,logging"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("access") / "model_repository"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), out)
    return out


# --------------------------------------------------------------------------- the facts


def test_restrict_takes_pytritons_default_names_all_and_none() -> None:
    assert access.parse_apis("default") == tuple(DEFAULT.split(","))
    assert access.parse_apis("none") == ()
    assert access.parse_apis("all") == access.APIS
    assert access.parse_apis("inference,default") == (
        "inference", "shared-memory", "model-repository", "statistics", "trace", "logging"
    )  # tritonserver's order, each once  # fmt: skip
    with pytest.raises(ValueError, match=r"'stats': expected tritonserver's API groups \(health, metadata"):
        access.parse_apis("default,stats")
    with pytest.raises(ValueError, match="nothing: expected"):
        access.parse_apis("")


def test_flags_per_release_and_their_real_format() -> None:
    """HTTP from 2.40.0, gRPC in every release; '<apis>:<header>=<value>' (not the ',' their --help showed)."""
    assert [r.tritonserver for r in RELEASES if not access.restricts_http(r.version)] == ["2.39.0"]
    assert all(access.restricts_grpc(r.version) for r in RELEASES)
    assert access.first_http_release().label == "tritonserver 2.40.0 (NGC 23.11)"
    assert access.restriction_args(("statistics", "logging"), "k=v:1", http=True, grpc=False) == [
        "--http-restricted-api=statistics,logging:triton-access-token=k=v:1"
    ]
    assert access.restriction_args((), "k", http=True, grpc=True) == []
    assert access.header_for("grpc") == "triton-grpc-protocol-triton-access-token"
    assert access.header_for("http") == "triton-access-token"


def test_the_probe_check_knows_the_refusal() -> None:
    """probe_check.py runs standalone in the container, so it spells the HTTP refusal itself: the same words."""
    assert all(access.HTTP_REFUSAL.startswith(marker) for marker in check_module.REFUSED)


# --------------------------------------------------------------------------- clients


class _Fake:
    def with_headers(self, name: str, headers: dict[str, str] | None = None) -> tuple[str, dict[str, str] | None]:
        return name, headers

    def without(self, name: str) -> str:
        return name


def test_a_keyed_client_sends_the_key_with_every_call_that_takes_headers() -> None:
    client = KeyedClient(_Fake(), {"triton-access-token": "k"})
    assert client.with_headers("a") == ("a", {"triton-access-token": "k"})
    assert client.with_headers("a", headers={"x": "1"}) == ("a", {"triton-access-token": "k", "x": "1"})
    assert client.without("b") == "b"
    assert KeyedClient(_Fake(), {}).with_headers("a") == ("a", None)


def test_a_key_is_found_from_the_flag_the_environment_or_a_serve_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("REPOGEN_ACCESS_TOKEN", raising=False)
    assert find_token(None, "127.0.0.1:8000") == (None, "")
    run = record_run(Access("from-serve"), (8000, 8001), os.getpid())
    assert run.stat().st_mode & 0o777 == 0o600  # the key is the owner's alone
    assert find_token(None, "127.0.0.1:8001") == ("from-serve", "the repogen serve run on this port")
    assert find_token(None, "localhost:8000")[0] == "from-serve"
    assert find_token(None, "127.0.0.1:9000") == (None, "")  # another port: another server
    assert find_token(None, "10.0.0.5:8000") == (None, "")  # never sent to a remote server
    monkeypatch.setenv("REPOGEN_ACCESS_TOKEN", "from-env")
    assert find_token(None, "127.0.0.1:8000") == ("from-env", "$REPOGEN_ACCESS_TOKEN")
    assert find_token("given", "127.0.0.1:8000") == ("given", "--access-token")
    monkeypatch.delenv("REPOGEN_ACCESS_TOKEN")
    forget_run(run)
    assert find_token(None, "127.0.0.1:8000") == (None, "")


def test_each_server_a_process_serves_has_its_own_run_file(tmp_path, monkeypatch) -> None:
    """Two servings in one process (a test session, a tool): forgetting one leaves the other's key findable."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("REPOGEN_ACCESS_TOKEN", raising=False)
    alive = subprocess.Popen(["sleep", "60"])
    try:
        first = record_run(Access("first"), (8000,), os.getpid())
        second = record_run(Access("second"), (9000,), alive.pid)
        assert first != second
        forget_run(first)
        assert find_token(None, "127.0.0.1:9000") == ("second", "the repogen serve run on this port")
        forget_run(second)
    finally:
        alive.kill()
        alive.wait()


def test_a_run_file_of_a_dead_serve_is_ignored(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("REPOGEN_ACCESS_TOKEN", raising=False)
    gone = subprocess.Popen(["true"])
    gone.wait()
    record_run(Access("stale"), (8000,), gone.pid)
    assert find_token(None, "127.0.0.1:8000") == (None, "")


def test_access_choose_a_given_key_else_the_environment_else_a_new_one(monkeypatch) -> None:
    monkeypatch.delenv("REPOGEN_ACCESS_TOKEN", raising=False)
    assert Access.choose(()) is None
    first, second = Access.choose(access.DEFAULT_RESTRICTED), Access.choose(access.DEFAULT_RESTRICTED)
    assert first and second and first.token != second.token and len(first.token) >= 43
    assert Access.choose(("logging",), "mine") == Access("mine", ("logging",))
    monkeypatch.setenv("REPOGEN_ACCESS_TOKEN", "env")
    assert Access.choose(("logging",)) == Access("env", ("logging",))


def test_perf_analyzer_gets_the_key_in_the_header_of_its_protocol() -> None:
    options = PerfOptions("M")
    http = perf_command(Path("pa"), options, "http", "u", Path("d"), [], False, "k")
    grpc = perf_command(Path("pa"), options, "grpc", "u", Path("d"), [], False, "k")
    assert http[http.index("-H") + 1] == "triton-access-token:k"
    assert grpc[grpc.index("-H") + 1] == "triton-grpc-protocol-triton-access-token:k"
    assert "-H" not in perf_command(Path("pa"), options, "http", "u", Path("d"), [], False, None)


def test_the_banner_curl_carries_the_key_only_when_inference_needs_it() -> None:
    metadata = {"inputs": [{"name": "a", "datatype": "FP32", "shape": [1]}]}
    assert " -H " not in sample_curl("h:1", "M", metadata)
    assert sample_curl("h:1", "M", metadata, {"triton-access-token": "k"}).startswith(
        "curl -s -H 'triton-access-token: k' h:1/v2/models/M/infer"
    )


def test_serve_sets_the_restriction_flags_itself() -> None:
    for flag in ("--http-restricted-api=logging:a=b", "--grpc-restricted-protocol=logging:a=b"):
        with pytest.raises(UsageError, match="use --restrict APIS and --access-token KEY instead"):
            check_passthrough((flag,), explicit=False)


def test_client_commands_take_the_key_and_serve_and_deploy_the_set() -> None:
    runner = CliRunner()
    for command in ("infer", "status", "load", "unload", "perf"):
        assert "--access-token KEY" in runner.invoke(cli, [command, "--help"]).output, command
    for command in ("serve", "deploy", "tune"):
        assert "--restrict APIS" in runner.invoke(cli, [command, "--help"]).output, command
    bad = runner.invoke(cli, ["deploy", ".", "--docker", "--restrict", "everything"])
    assert bad.exit_code == 2 and "'everything': expected tritonserver's API groups" in bad.output


# --------------------------------------------------------------------------- deployments


def _files(repo: Path, **options: object) -> dict[str, str]:
    options.setdefault("context", repo.parent)
    return generate(repo, DeployOptions(**options)).files  # type: ignore[arg-type]


def _container(manifest: str) -> dict:
    deployment = next(yaml.safe_load_all(manifest))
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _cmd(dockerfile: str) -> list[str]:
    line = next(line for line in dockerfile.splitlines() if line.startswith("CMD "))
    return json.loads(line.removeprefix("CMD "))


def test_docker_runs_the_server_with_the_key_from_docker_run(repo: Path, tmp_path: Path) -> None:
    """The CMD as the container runs it (sh -c), with a stand-in tritonserver printing its arguments."""
    text = _files(repo, docker=True)[DOCKERFILE]
    assert "docker run --rm --shm-size=64m -e REPOGEN_ACCESS_TOKEN -p8000:8000" in text
    cmd = _cmd(text)
    assert cmd[:2] == ["/bin/sh", "-c"]
    fake = tmp_path / "bin" / "tritonserver"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin"}
    started = subprocess.run(cmd, env={**env, "REPOGEN_ACCESS_TOKEN": "s3cr:t=x y"}, capture_output=True, text=True)
    assert started.stdout.splitlines() == [
        "--model-repository=/models",
        f"--http-restricted-api={DEFAULT}:triton-access-token=s3cr:t=x y",
        f"--grpc-restricted-protocol={DEFAULT}:triton-access-token=s3cr:t=x y",
    ]
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stdout == ""  # never started without the key
    assert "REPOGEN_ACCESS_TOKEN: the restricted APIs need a key: docker run -e REPOGEN_ACCESS_TOKEN=KEY" in (
        refused.stderr
    )
    assert _cmd(_files(repo, docker=True, restrict=())[DOCKERFILE]) == ["tritonserver", "--model-repository=/models"]


def test_kubernetes_takes_the_key_from_a_secret_and_says_how_to_make_it(repo: Path) -> None:
    text = _files(repo, k8s=True, name="qs")[K8S_FILE]
    assert (
        '#   kubectl create secret generic qs-access-token --from-literal=token="$(python3 -c '
        "'import secrets; print(secrets.token_urlsafe(32))')\""
    ) in text
    container = _container(text)
    assert container["env"] == [
        {"name": "REPOGEN_ACCESS_TOKEN", "valueFrom": {"secretKeyRef": {"name": "qs-access-token", "key": "token"}}}
    ]
    assert container["args"][2:] == [
        f"--http-restricted-api={DEFAULT}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
        f"--grpc-restricted-protocol={DEFAULT}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
    ]
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"  # health is open
    assert len(container["livenessProbe"]["exec"]["command"]) == 5  # inference is open: no key sent
    secret = _files(repo, k8s=True, access_secret="mine")[K8S_FILE]
    assert _container(secret)["env"][0]["valueFrom"] == {"secretKeyRef": {"name": "mine", "key": "token"}}


def test_probes_carry_the_key_where_health_or_inference_need_it(repo: Path) -> None:
    text = _files(repo, k8s=True, docker=True, restrict=access.APIS)
    container = _container(text[K8S_FILE])
    liveness = container["livenessProbe"]["exec"]["command"]
    assert liveness[5:] == ["triton-access-token", "REPOGEN_ACCESS_TOKEN"]
    for probe in ("startupProbe", "readinessProbe"):
        command = container[probe]["exec"]["command"]
        assert json.loads(command[4]) == [{"path": "/v2/health/ready"}] and command[5:] == liveness[5:]
    healthcheck = next(line for line in text[DOCKERFILE].splitlines() if line.startswith("HEALTHCHECK "))
    assert json.loads(healthcheck.split(" CMD ", 1)[1])[5:] == liveness[5:]


def test_kserve_passes_flags_and_secret_on_the_stock_runtime_and_an_image(repo: Path) -> None:
    stock = yaml.safe_load(_files(repo, kserve=True, name="qs")[KSERVE_FILE])["spec"]["predictor"]["model"]
    assert stock["args"] == [  # KServe appends them to its Triton runtime's arguments
        f"--http-restricted-api={DEFAULT}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
        f"--grpc-restricted-protocol={DEFAULT}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
    ]
    assert stock["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "qs-access-token", "key": "token"}
    own = yaml.safe_load(_files(repo, kserve=True, image="r/q:1", name="qs")[KSERVE_FILE])["spec"]["predictor"][
        "containers"
    ][0]
    assert own["args"][-2:] == stock["args"] and own["env"] == stock["env"]
    assert "--http-port=8080" in own["args"]
    nothing = yaml.safe_load(_files(repo, kserve=True, restrict=())[KSERVE_FILE])["spec"]["predictor"]["model"]
    assert "args" not in nothing and "env" not in nothing


def test_a_release_without_http_restriction_is_refused_unless_asked_open(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as refused:  # --restrict (default) and --triton-release 23.10 contradict
        _files(repo, docker=True, triton_release="23.10")
    assert str(refused.value) == (
        "tritonserver 2.39.0 (NGC 23.10) cannot keep its HTTP APIs behind a key (--http-restricted-api came with "
        f"tritonserver 2.40.0 (NGC 23.11)), so {DEFAULT.replace(',', ', ')} would answer anyone over HTTP; nothing was "
        "written. Deploy on --triton-release 23.11 or later, or pass --restrict none to deploy with every API open."
    )
    opened = _files(repo, docker=True, k8s=True, triton_release="23.10", restrict=())
    assert "# Nothing is restricted (--restrict none)" in opened[DOCKERFILE]
    assert "-restricted-" not in opened[K8S_FILE] and "env" not in _container(opened[K8S_FILE])
    for release in ("23.11", "2.41.0"):
        args = _files(repo, k8s=True, triton_release=release)[K8S_FILE]
        assert "--http-restricted-api=" in args and "--grpc-restricted-protocol=" in args, release
    result = CliRunner().invoke(cli, ["deploy", str(repo), "--k8s", "--triton-release", "23.10", "-o", str(tmp_path)])
    assert result.exit_code == 2 and not list(tmp_path.iterdir())


def test_no_key_is_written_anywhere(repo: Path, monkeypatch) -> None:
    monkeypatch.setenv("REPOGEN_ACCESS_TOKEN", "do-not-write-me")
    files = _files(repo, docker=True, k8s=True, kserve=True, restrict=access.APIS)
    assert not any("do-not-write-me" in text for text in files.values())


def test_no_key_is_kept_where_others_could_read_or_plant_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "repogen").mkdir(mode=0o777)
    (tmp_path / "repogen").chmod(0o777)
    assert runs_dir() is None and record_run(Access("k"), (8000,), os.getpid()) is None
    (tmp_path / "repogen").rmdir()
    (tmp_path / "repogen").symlink_to(tmp_path)
    assert runs_dir() is None


def test_a_tritonserver_of_unknown_release_is_asked_its_help(tmp_path) -> None:
    """`serve --tritonserver PATH` and `tune --tritonserver PATH`: the flags its --help lists (on stderr, exit 1)."""
    old = tmp_path / "old"
    old.write_text("#!/bin/sh\necho '  --grpc-restricted-protocol <<string>:<string>=<string>>' >&2\nexit 1\n")
    old.chmod(0o755)
    assert help_restricts(old, {}) == {"http": False, "grpc": True}
    assert help_restricts(tmp_path / "missing", {}) == {"http": False, "grpc": False}
