"""The tritonserver options a repository's models depend on: what the build records, what ``repogen inspect`` shows,
what ``repogen serve`` and every deploy target start tritonserver with, what a model finds missing in its server's
command line (tests/integration/test_server_options_served.py and tests/containers/test_server_options_in_containers.py
serve them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from repogen import InstanceGroup, ModelConfig, RateLimiter, Repository, ServerOptions, Tensor, build_app
from repogen.build import build_repository
from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import COMPOSE_FILE, DOCKERFILE, K8S_FILE, KSERVE_FILE
from repogen.errors import BuildError
from repogen.ondisk.reader import read_repository
from repogen.runtime.contract.tritonserver_flags import given_by
from repogen.runtime.server_flags import config_needs, missing, needs_of, satisfied
from repogen.server.running.serving import repository_arguments

ROOT = Path(__file__).resolve().parents[3]
APP = str(ROOT / "tests" / "apps" / "server_options" / "app.py") + ":models"
NEEDED = ["--cache-config=local,size=8388608", "--rate-limit=execution_count"]
X = [Tensor(name="x", dtype=np.float32, shape=(1,))]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("server_options") / "model_repository"
    build_app(APP, out)
    return out


def _limited(models: Repository, name: str, resources: dict[str, int], count: int = 2) -> None:
    group = InstanceGroup(count=count, rate_limiter=RateLimiter(resources=resources))
    models.bind(name, lambda requests: requests, inputs=X, outputs=X,
                config=ModelConfig(batching=False, instance_groups=[group]))  # fmt: skip


def test_the_build_records_each_option_with_its_models_and_why(repo: Path) -> None:
    record = json.loads((repo / "repogen.manifest.json").read_text())["server"]
    assert record["settings"] == {"response_cache_byte_size": 8388608}
    assert [(o["flag"], o["value"], o["models"]) for o in record["options"]] == [
        ("--cache-config", "local,size=8388608", ["Cached"]),
        ("--rate-limit", "execution_count", ["Limited"]),
    ]
    assert read_repository(repo).server_args() == NEEDED


def test_a_repository_that_needs_nothing_records_nothing(tmp_path: Path) -> None:
    build_app(str(ROOT / "examples" / "quickstart" / "app.py") + ":models", tmp_path / "repo")
    assert "server" not in json.loads((tmp_path / "repo" / "repogen.manifest.json").read_text())
    assert read_repository(tmp_path / "repo").server_args() == []


def test_inspect_lists_them(repo: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "repogen", "inspect", str(repo)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (
        "tritonserver options the models depend on (repogen serve and the files repogen deploy writes pass them; start "
        "any other tritonserver with them):\n  --cache-config=local,size=8388608  (Cached: their configs enable the "
        "response cache, which caches nothing in a server started without a cache)\n  --rate-limit=execution_count  "
        "(Limited: their instances declare rate limiter resources, which a server schedules by only with the rate "
        "limiter on)\n"
    ) in done.stdout
    described = json.loads(
        subprocess.run(
            [sys.executable, "-m", "repogen", "inspect", str(repo), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
    )
    assert [o["flag"] for o in described["server_options"]] == ["--cache-config", "--rate-limit"]


def test_every_deploy_target_starts_the_server_with_them(repo: Path) -> None:
    out = generate(repo, DeployOptions(docker=True, k8s=True, kserve=True, compose=True, context=repo.parent))
    cmd = next(line for line in out.files[DOCKERFILE].splitlines() if line.startswith("CMD "))
    assert f"exec tritonserver --model-repository=/models {' '.join(NEEDED)} " in cmd  # so in its `docker run` line
    compose = yaml.safe_load(out.files[COMPOSE_FILE])
    assert " ".join(NEEDED) in compose["services"][next(iter(compose["services"]))]["command"][-1]
    deployment = next(d for d in yaml.safe_load_all(out.files[K8S_FILE]) if d["kind"] == "Deployment")
    assert _within(NEEDED, deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    isvc = yaml.safe_load_all(out.files[KSERVE_FILE])
    model = next(d for d in isvc if d["kind"] == "InferenceService")["spec"]["predictor"]["model"]
    assert _within(NEEDED, model["args"])  # KServe's Triton runtime (and a modelcar, oci://) appends them
    image = generate(repo, DeployOptions(kserve=True, image="reg/models:1")).files[KSERVE_FILE]
    container = next(d for d in yaml.safe_load_all(image) if d["kind"] == "InferenceService")
    assert _within(NEEDED, container["spec"]["predictor"]["containers"][0]["args"])


def _within(part: list[str], whole: list[str]) -> bool:
    return any(whole[i : i + len(part)] == part for i in range(len(whole)))


def test_serve_adds_what_the_arguments_after_dashes_leave_out(repo: Path) -> None:
    assert repository_arguments(repo, ()) == NEEDED
    assert repository_arguments(repo, ("--cache-config=redis,host=cache",)) == NEEDED[1:]
    assert repository_arguments(repo, ("--response-cache-byte-size=1024",)) == NEEDED[1:]  # refused beside it
    assert repository_arguments(repo, ("--rate-limit", "off")) == NEEDED[:1]  # the user's choice stands


def test_resource_counts_are_listed_for_every_resource(tmp_path: Path) -> None:
    models = Repository(server_options=ServerOptions(rate_limit_resources={"slot": 3}))
    _limited(models, "A", {"slot": 1, "mem": 2})
    _limited(models, "B", {"mem": 4}, count=1)
    build_repository(models, tmp_path / "repo")
    assert read_repository(tmp_path / "repo").server_args() == [
        "--rate-limit=execution_count", "--rate-limit-resource=mem:4", "--rate-limit-resource=slot:3",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ServerOptions(response_cache_byte_size=0), "ServerOptions(response_cache_byte_size=0): expected a number of "
         "bytes > 0"),
        (ServerOptions(rate_limit_resources={"gpu": 1}), "ServerOptions(rate_limit_resources={'gpu': ...}): no model's "
         "rate limiter declares resource 'gpu'; the resources declared are slot"),
        (ServerOptions(rate_limit_resources={"slot": 1}), "ServerOptions(rate_limit_resources={'slot': 1}): model 'A' "
         "has instances that need 2 of 'slot' each, which a server with fewer never schedules (tritonserver refuses to "
         "load it); give at least 2"),
    ],
)  # fmt: skip
def test_what_the_server_would_refuse_is_refused_at_build_naming_the_line(options, message, tmp_path: Path) -> None:
    models = Repository(server_options=options)  # the line the error starts with
    _limited(models, "A", {"slot": 2})
    with pytest.raises(BuildError) as refused:
        build_repository(models, tmp_path / "repo")
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "error starts with" in text)
    assert str(refused.value) == f"tests/unit/emit/test_server_options.py:{line}: {message}"


def test_upper_case_resources_cannot_be_counted_on_the_command_line(tmp_path: Path) -> None:
    models = Repository(server_options=ServerOptions(rate_limit_resources={"slot": 1}))
    _limited(models, "A", {"slot": 1, "GPU": 1})
    with pytest.raises(BuildError, match=r"tritonserver lower-cases, .* resource\(s\) 'GPU' would count 0"):
        build_repository(models, tmp_path / "repo")


def test_a_merged_version_keeps_the_options_of_the_models_it_carries(tmp_path: Path) -> None:
    first = Repository()
    first.bind("Cached", lambda r: r, inputs=X, outputs=X, config=ModelConfig(batching=False, response_cache=True))
    build_repository(first, tmp_path / "repo")
    second = Repository()
    _limited(second, "Limited", {"slot": 1})
    build_repository(second, tmp_path / "repo", version=2)
    assert read_repository(tmp_path / "repo").server_args() == [
        "--cache-config=local,size=67108864", "--rate-limit=execution_count",
    ]  # fmt: skip


def test_a_model_names_each_flag_its_server_lacks_once(repo: Path) -> None:
    config = {"response_cache": {"enable": True}, "instance_group": [{"rate_limiter": {"resources": []}}]}
    assert [flag for flag, _, _ in config_needs(config)] == ["--cache-config", "--rate-limit"]
    needs = needs_of("Cached", {"response_cache": {"enable": True}}, str(repo / "Cached"))
    assert needs[0][:2] == ("--cache-config", "local,size=8388608")  # the size the build recorded
    lines = missing("Cached", needs, ["tritonserver", "--model-repository=/models"])
    assert [flag for flag, _ in lines] == ["--cache-config"]
    assert lines[0][1].startswith(
        "model 'Cached': tritonserver was started without --cache-config=local,size=8388608: its config enables the "
        "response cache (ModelConfig(response_cache=True)), which caches nothing in a server started without a cache. "
        "Start it with --cache-config=local,size=8388608"
    )
    assert missing("Cached", needs, ["tritonserver", "--cache-config", "local,size=1"]) == []


@pytest.mark.parametrize(
    ("argv", "flag", "value", "expected"),
    [
        (["--rate-limit=execution_count"], "--rate-limit", "execution_count", True),
        (["--rate-limit=off"], "--rate-limit", "execution_count", False),
        (["--rate-limit-resource=SLOT:2"], "--rate-limit-resource", "slot:1", True),
        (["--cuda-memory-pool-byte-size=1:1024"], "--cuda-memory-pool-byte-size", "0:1024", False),
        (["--response-cache-byte-size=9"], "--cache-config", "local,size=1", True),
    ],
)
def test_what_satisfies_an_option(argv, flag, value, expected) -> None:
    assert satisfied(["tritonserver", *argv], flag, value) is expected
    assert given_by(argv, flag, value) is (expected or flag == "--rate-limit")


def test_the_cuda_pool_a_gpu_model_needs_is_recorded_and_missed(tmp_path: Path) -> None:
    models = Repository()
    big = [Tensor(name="x", dtype=np.float32, shape=(1024, 1024))]
    models.bind(
        "Big",
        lambda requests: requests,
        inputs=big,
        outputs=big,
        config=ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[0])]),
    )
    build_repository(models, tmp_path / "repo")
    record = json.loads((tmp_path / "repo" / "repogen.manifest.json").read_text())["server"]["options"]
    assert [(o["flag"], o["value"], o["models"]) for o in record] == [
        ("--cuda-memory-pool-byte-size", "0:1073741824", ["Big"])
    ]
    needs = needs_of("Big", {"instance_group": [{"kind": "KIND_GPU"}]}, str(tmp_path / "repo" / "Big"))
    assert [flag for flag, _ in missing("Big", needs, ["tritonserver"])] == ["--cuda-memory-pool-byte-size"]
    assert missing("Big", needs, ["tritonserver", "--cuda-memory-pool-byte-size=0:2147483648"]) == []
