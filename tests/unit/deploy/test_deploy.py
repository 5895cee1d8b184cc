"""repogen deploy: Dockerfile, Kubernetes and KServe files, checked structurally.

The YAML is parsed back with PyYAML's safe loader and compared with the dicts that produced it;
the Dockerfile is checked line by line.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.deploy import DeployError, DeployOptions, generate
from repogen.deploy.files import DOCKERFILE, DOCKERIGNORE, K8S_FILE, KSERVE_FILE, dump_yaml
from repogen.deploy.resources import MiB
from repogen.deploy.wheel import wheel_bytes
from repogen.errors import RepositoryError, UnknownReleaseError, UsageError
from repogen.ondisk.reader import read_repository
from repogen.triton.releases import get_release
from repogen.triton.restricted_apis import DEFAULT_RESTRICTED
from repogen.triton.shm import shm_size_bytes

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = "examples/quickstart/app.py:models"
_APIS = "shared-memory,model-repository,statistics,trace,logging"
# The server's command, keeping PyTriton 0.7's set of APIs behind the key `docker run -e` gives.
RESTRICTED_CMD = (
    'CMD ["/bin/sh", "-c", ": \\"${REPOGEN_ACCESS_TOKEN:?the restricted APIs need a key: docker run -e '
    'REPOGEN_ACCESS_TOKEN=KEY ... (repogen deploy --restrict none: every API open)}\\"; exec tritonserver '
    f'--model-repository=/models \\"--http-restricted-api={_APIS}:triton-access-token=${{REPOGEN_ACCESS_TOKEN}}\\" '
    f'\\"--grpc-restricted-protocol={_APIS}:triton-access-token=${{REPOGEN_ACCESS_TOKEN}}\\""]'
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deploy") / "model_repository"
    build_app(str(ROOT / QUICKSTART), out)
    return out


@pytest.fixture
def repo_with_requirements(tmp_path: Path, repo: Path) -> Path:
    """The quickstart with requirements recorded and 3 AddSub instances, as a build would write them."""
    copy = tmp_path / "reqs_repo"
    subprocess.run(["cp", "-r", str(repo), str(copy)], check=True)
    for model, reqs in (
        ("AddSub", {"pandas": "pandas==2.2.3"}),
        ("Shout", {"scipy": "scipy==1.14.1", "pd": "pandas==2.2.3"}),
    ):
        meta = copy / model / "1" / "model.json"
        data = json.loads(meta.read_text())
        data["requirements"] = reqs
        meta.write_text(json.dumps(data))
    config = copy / "AddSub" / "config.pbtxt"
    config.write_text(config.read_text().replace("count: 1", "count: 3"))
    return copy


def _k8s(repo: Path, **options: object) -> list[dict]:
    out = generate(repo, DeployOptions(k8s=True, **options))  # type: ignore[arg-type]
    return list(yaml.safe_load_all(out.files[K8S_FILE]))


def _container(documents: list[dict]) -> dict:
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


# --------------------------------------------------------------------------- YAML emitter


def test_yaml_round_trips_the_awkward_scalars() -> None:
    doc = {
        "a": ["8000", "yes", "no", "on", "24.10", "-x", "1e3", "a: b", "#c", "", "null", "~", "y"],
        "b": {"n": 1, "f": 1.5, "t": True, "z": None, "e": {}, "l": []},
        "c": [{"k": [{"deep": "v"}], "k2": "nvcr.io/nvidia/tritonserver:24.10-py3"}, "plain", 3],
        "quantities": ["256Mi", "2Gi", "500m"],
        "unicode": "héllo\nworld",
        "long": "--model-repository=/models " * 10,
    }
    text = dump_yaml(doc)
    assert yaml.safe_load(text) == doc
    assert "256Mi" in text and "'8000'" in text and "'yes'" in text  # quantities plain, ambiguous strings quoted
    assert "héllo" in text and len(text.splitlines()) == len(dump_yaml({**doc, "long": ""}).splitlines())


def test_yaml_is_deterministic_and_keeps_key_order() -> None:
    doc = {"z": 1, "a": [{"b": 2}]}
    assert dump_yaml(doc) == dump_yaml(dict(doc)) == "z: 1\na:\n- b: 2\n"
    assert dump_yaml(doc, {"kind": "Service"}) == "z: 1\na:\n- b: 2\n---\nkind: Service\n"


# --------------------------------------------------------------------------- repository facts


def test_instances_and_shm_are_counted_from_the_configs(repo: Path, repo_with_requirements: Path) -> None:
    instances = read_repository(repo).python_instances()
    assert instances == 2
    assert shm_size_bytes(instances) == 64 * MiB  # 2 x 16 MiB, +25% = 40 MiB: the 64 MiB floor
    info = read_repository(repo_with_requirements)
    assert info.python_instances() == 4
    assert shm_size_bytes(info.python_instances()) == 80 * MiB  # 4 x 16 MiB = 64 MiB, +25% = 80 MiB
    assert info.requirements == ("pandas==2.2.3", "scipy==1.14.1")  # deduplicated, sorted


def test_not_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="holds no model"):
        generate(tmp_path, DeployOptions(k8s=True))
    with pytest.raises(RepositoryError, match="not a directory"):
        generate(tmp_path / "missing", DeployOptions(k8s=True))
    (tmp_path / "M").mkdir()
    (tmp_path / "M" / "config.pbtxt").write_text("max_batch_sise: 1\n")
    with pytest.raises(RepositoryError, match=r"model 'M': cannot parse .*config.pbtxt \(line 1: "):
        generate(tmp_path, DeployOptions(k8s=True))
    with pytest.raises(UsageError, match="at least one of --docker, --k8s, --kserve"):
        generate(tmp_path, DeployOptions())


# --------------------------------------------------------------------------- Kubernetes


def test_k8s_deployment_probes_ports_shm_and_image(repo: Path) -> None:
    documents = _k8s(repo, image="registry.example.com/qs:1.0")
    assert [d["kind"] for d in documents] == ["Deployment", "Service"]
    container = _container(documents)
    assert container["image"] == "registry.example.com/qs:1.0"
    assert "command" not in container  # NVIDIA's entrypoint runs, as in KServe's Triton runtime
    assert container["args"] == [
        "tritonserver", "--model-repository=/models",
        f"--http-restricted-api={_APIS}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
        f"--grpc-restricted-protocol={_APIS}:triton-access-token=$(REPOGEN_ACCESS_TOKEN)",
    ]  # fmt: skip
    assert container["securityContext"] == {
        "runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True, "allowPrivilegeEscalation": False,
        "privileged": False, "capabilities": {"drop": ["ALL"]},
    }  # fmt: skip
    annotations = documents[0]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8002",
        "prometheus.io/path": "/metrics",
    }
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": 8000}
    liveness = container["livenessProbe"]  # a real inference per model: deploy/probe.py
    assert liveness["exec"]["command"][:2] == ["python3", "-c"] and liveness["periodSeconds"] == 10
    assert liveness["exec"]["command"][3] == "http://127.0.0.1:8000"
    probed = {p["model"] for p in json.loads(liveness["exec"]["command"][4])}
    assert probed == {m.name for m in read_repository(repo).models}
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert sorted(p["containerPort"] for p in container["ports"]) == [8000, 8001, 8002]
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes = documents[0]["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}]
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "2", "memory": "4Gi"},
    }
    service = documents[1]
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert service["spec"]["selector"] == documents[0]["spec"]["selector"]["matchLabels"]


def test_k8s_names_image_and_resources_are_configurable(repo: Path) -> None:
    documents = _k8s(
        repo, name="adder", replicas=3, cpu_request="500m", cpu_limit="4", memory_request="1Gi",
        memory_limit="8Gi", shm_size="1Gi", gpus=2,
    )  # fmt: skip
    container = _container(documents)
    assert documents[0]["metadata"]["name"] == documents[1]["metadata"]["name"] == "adder"
    assert documents[0]["spec"]["replicas"] == 3
    assert container["image"] == "adder:latest"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert container["resources"]["limits"] == {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2}
    assert documents[0]["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1Gi"


def test_k8s_default_name_is_a_dns_label(repo: Path) -> None:
    assert _k8s(repo)[0]["metadata"]["name"] == "model-repository"


def test_k8s_memory_limit_must_hold_shm(repo: Path) -> None:
    with pytest.raises(UsageError, match="cannot hold /dev/shm"):
        _k8s(repo, shm_size="2Gi", memory_limit="2Gi")
    container = _container(_k8s(repo, shm_size="6Gi"))  # the default limit grows to hold it
    assert container["resources"]["limits"]["memory"] == "8Gi"


def test_k8s_yaml_is_deterministic_and_equals_the_dicts(repo: Path) -> None:
    from repogen.deploy import access_secret as access
    from repogen.deploy import kubernetes, probe

    first = generate(repo, DeployOptions(k8s=True)).files[K8S_FILE]
    assert first == generate(repo, DeployOptions(k8s=True)).files[K8S_FILE]
    info = read_repository(repo)
    resources = kubernetes.resolve_resources(info)
    liveness = probe.liveness_probe(info, kubernetes.HTTP_PORT, DEFAULT_RESTRICTED)
    target = get_release("24.10")
    expected = [
        kubernetes.deployment(
            "model-repository", "model-repository:latest", resources, liveness=liveness,
            server_extra=access.kubernetes_args(target, DEFAULT_RESTRICTED),
            env=access.kubernetes_env("model-repository-access-token"),
        ),
        kubernetes.service("model-repository"),
    ]  # fmt: skip
    assert list(yaml.safe_load_all(first)) == expected
    assert first.startswith("# Generated by repogen")


# --------------------------------------------------------------------------- KServe


def test_kserve_storage_uri_uses_the_triton_runtime(repo: Path) -> None:
    out = generate(repo, DeployOptions(kserve=True, storage_uri="s3://bucket/qs", triton_release="2.51.0"))
    isvc = yaml.safe_load(out.files[KSERVE_FILE])
    assert isvc["apiVersion"] == "serving.kserve.io/v1beta1"
    assert isvc["kind"] == "InferenceService"
    model = isvc["spec"]["predictor"]["model"]
    assert model["modelFormat"] == {"name": "triton"}
    assert model["storageUri"] == "s3://bucket/qs"
    assert model["runtimeVersion"] == "24.10-py3"
    assert model["protocolVersion"] == "v2"
    assert model["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert isvc["spec"]["predictor"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Mi"}
    assert isvc["metadata"]["annotations"] == {
        "serving.kserve.io/enable-prometheus-scraping": "true",
        "prometheus.kserve.io/port": "8002",
        "prometheus.kserve.io/path": "/metrics",
    }
    assert out.warnings == ()  # a portable build serves on the stock runtime's Python 3.10, whoever built it


def test_kserve_image_runs_a_custom_predictor(repo: Path) -> None:
    isvc = yaml.safe_load(generate(repo, DeployOptions(kserve=True, image="reg/qs:2")).files[KSERVE_FILE])
    (container,) = isvc["spec"]["predictor"]["containers"]
    assert container["image"] == "reg/qs:2"
    assert "command" not in container and container["args"][0] == "tritonserver"
    assert "--http-port=8080" in container["args"] and "--model-repository=/models" in container["args"]
    assert container["securityContext"]["runAsUser"] == 1000
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    with pytest.raises(UsageError, match="expected one"):
        generate(repo, DeployOptions(kserve=True, image="x", storage_uri="s3://b"))


def test_kserve_refuses_what_the_stock_runtime_cannot_load(repo_with_requirements: Path, tmp_path: Path) -> None:
    """The models import packages the stock runtime lacks: exit 1, nothing written, the fix named."""
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["deploy", str(repo_with_requirements), "--kserve", "--storage-uri", "s3://b/x", "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "the models import pandas==2.2.3, scipy==1.14.1, which KServe's stock Triton runtime" in result.output
    assert "nothing was written. Rebuild without --packages record" in result.output
    assert "or: Build an image with `repogen deploy --docker` and pass it as --image" in result.output
    assert not out.exists()
    image = generate(repo_with_requirements, DeployOptions(kserve=True, image="reg/qs:3"))  # the fix works
    assert image.warnings == () and KSERVE_FILE in image.files


def test_autoscaling_on_cpu(repo: Path) -> None:
    documents = _k8s(repo, replicas=2, max_replicas=6, target_cpu_utilization=70)
    assert [d["kind"] for d in documents] == ["Deployment", "Service", "HorizontalPodAutoscaler"]
    hpa = documents[2]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "model-repository"}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 6)
    assert hpa["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}
    isvc = yaml.safe_load(generate(repo, DeployOptions(kserve=True, max_replicas=4)).files[KSERVE_FILE])
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"], predictor["scaleMetric"]) == (1, 4, "cpu")
    assert predictor["scaleTarget"] == 80
    assert [d["kind"] for d in _k8s(repo)] == ["Deployment", "Service"]  # no autoscaler unless asked
    with pytest.raises(UsageError, match="--max-replicas 1 is below --replicas 2"):
        _k8s(repo, replicas=2, max_replicas=1)


# --------------------------------------------------------------------------- Docker


def _dockerfile(repo: Path, **options: object) -> str:
    options.setdefault("context", ROOT)
    options.setdefault("output_dir", ROOT / "deploy")  # inside the context, where the wheel would be written
    return generate(repo, DeployOptions(docker=True, **options)).files[DOCKERFILE]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("version", "tag"), [("24.10", "24.10"), ("2.41.0", "23.12"), ("r23.10", "23.10"), ("25.01", "25.01")]
)
def test_dockerfile_from_line_per_release(repo: Path, version: str, tag: str) -> None:
    restrict = () if tag == "23.10" else DEFAULT_RESTRICTED  # 2.39 cannot restrict HTTP: test_restricted_apis.py
    text = _dockerfile(repo, app=QUICKSTART, triton_release=version, restrict=restrict)
    assert f"ARG TRITON_IMAGE=nvcr.io/nvidia/tritonserver:{tag}-py3\n" in text
    assert re.findall(r"^FROM .*$", text, flags=re.MULTILINE) == [
        "FROM ${TRITON_IMAGE} AS build",
        "FROM ${TRITON_IMAGE}",
    ]
    python = "3.12" if tag == "25.01" else "3.10"
    assert f"serves models with Python {python}" in text


def test_dockerfile_with_app_builds_inside_the_image(repo: Path) -> None:
    text = _dockerfile(repo, app=QUICKSTART)
    lines = text.splitlines()
    assert "COPY . /src" in lines
    assert "RUN repogen build /src/examples/quickstart/app.py:models -o /models" in lines
    assert "COPY --from=build /models /models" in lines
    assert "COPY deploy/triton_repogen-0.1.0-py3-none-any.whl /tmp/wheels/" in lines  # never by name from an index
    assert "RUN python3 -m pip install --no-cache-dir /tmp/wheels/triton_repogen-0.1.0-py3-none-any.whl \\" in lines
    assert not any("pip install" in line and " repogen" in line for line in lines)
    assert "EXPOSE 8000 8001 8002" in lines
    assert lines[-1] == RESTRICTED_CMD
    assert "USER 1000:1000" in lines and not any(line.startswith("ENTRYPOINT") for line in lines)
    healthcheck = text[text.index("HEALTHCHECK") :].split("\n#")[0]
    assert "--start-period=600s" in healthcheck and '"python3", "-c", ' in healthcheck
    assert '"http://127.0.0.1:8000", "[{' in healthcheck and "\n" not in healthcheck.strip()
    assert "--shm-size=64m" in text


def test_dockerfile_copies_the_repository_by_default(repo: Path) -> None:
    context = repo.parent
    text = _dockerfile(repo, context=context)
    assert text == _dockerfile(repo, prebuilt=True, context=context)  # --prebuilt says the default
    out = generate(repo, DeployOptions(docker=True, context=context))
    assert out.binaries == {}  # no wheel: repogen stays out of the image
    ignore = out.files[DOCKERIGNORE].splitlines()  # the packages a repository ships hold bytecode: keep it
    assert "**/*.pyc" in ignore and ignore[-1] == "!model_repository/**"
    lines = text.splitlines()
    assert "# Generated by repogen 0.1.0: repogen deploy --docker" in lines
    assert "COPY model_repository /models" in lines
    assert "COPY . /src" not in lines and "repogen build" not in text.replace("repogen deploy", "")
    assert [line for line in lines if line.startswith("FROM")] == ["FROM ${TRITON_IMAGE}"]
    assert lines[-1] == RESTRICTED_CMD


def test_dockerfile_installs_recorded_requirements(repo_with_requirements: Path) -> None:
    for options in ({"app": QUICKSTART, "context": ROOT}, {"prebuilt": True, "context": repo_with_requirements.parent}):
        text = _dockerfile(repo_with_requirements, **options)
        install = "RUN python3 -m pip install --no-cache-dir pandas==2.2.3 scipy==1.14.1"
        stages = text.split("\nFROM ")
        assert all(install in stage for stage in stages[1:]), text  # every stage that imports the models has them


def _ship(repo: Path) -> None:
    """Record, as a default build does, that every requirement ships inside its model version."""
    for meta in repo.glob("*/1/model.json"):
        data = json.loads(meta.read_text())
        names = sorted({r.split("==")[0] for r in data.get("requirements", {}).values()})
        lock = [{"name": n, "version": "1", "wheel": f"{n}-1-py3-none-any.whl", "sha256": "0" * 64} for n in names]
        data["packages"] = {"cp310-x86_64": {"digest": "0" * 64, "lock": lock}} if names else {}
        meta.write_text(json.dumps(data))


def test_shipped_packages_need_no_image_of_their_own(repo_with_requirements: Path) -> None:
    _ship(repo_with_requirements)
    assert read_repository(repo_with_requirements).requirements == ()
    stock = generate(repo_with_requirements, DeployOptions(kserve=True, storage_uri="s3://b/x"))
    assert KSERVE_FILE in stock.files  # KServe's stock runtime serves it as it is
    prebuilt = _dockerfile(repo_with_requirements, prebuilt=True, context=repo_with_requirements.parent)
    assert "RUN python3 -m pip install" not in prebuilt and "ship in the repository" in prebuilt
    build, serve = _dockerfile(repo_with_requirements, app=QUICKSTART, context=ROOT).split("\nFROM ")[1:]
    install = "RUN python3 -m pip install --no-cache-dir pandas==2.2.3 scipy==1.14.1"
    assert install in build and install not in serve  # the app imports them to build; the repository ships them


def test_dockerfile_without_requirements_says_so(repo: Path) -> None:
    assert "# No third-party requirements recorded" in _dockerfile(repo, app=QUICKSTART)


def test_dockerfile_errors(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--app .* rebuilds it inside the image; expected one of them"):
        _dockerfile(repo, prebuilt=True, app=QUICKSTART)
    with pytest.raises(UsageError, match="repository .* is outside the Docker build context"):
        _dockerfile(repo, context=tmp_path)
    with pytest.raises(UnknownReleaseError, match="NGC release"):
        _dockerfile(repo, app=QUICKSTART, triton_release="latest")


def _manifest_says(repo: Path, copy: Path, **fields: object) -> Path:
    subprocess.run(["cp", "-r", str(repo), str(copy)], check=True)
    manifest = json.loads((copy / "repogen.manifest.json").read_text())
    manifest.update(fields)
    (copy / "repogen.manifest.json").write_text(json.dumps(manifest))
    return copy


def test_prebuilt_warns_where_python_may_not_load_and_refuses_where_it_cannot(repo: Path, tmp_path: Path) -> None:
    def warnings(repository: Path, release: str = "24.10") -> tuple[str, ...]:
        options = DeployOptions(docker=True, context=repository.parent, triton_release=release)
        return generate(repository, options).warnings

    assert read_repository(repo).portable and warnings(repo) == warnings(repo, "25.01") == ()
    narrowed = _manifest_says(repo, tmp_path / "narrowed", pythons=["3.12"])
    (message,) = warnings(narrowed)
    assert "was checked for Python 3.12 only, but tritonserver 2.51.0 (NGC 24.10)" in message
    assert "serves models with Python 3.10" in message and "--triton-release 24.10" in message
    assert warnings(narrowed, "25.01") == ()
    pinned = _manifest_says(repo, tmp_path / "pinned", portable=False, build={"python": "3.11"})
    with pytest.raises(DeployError) as error:  # cannot load there: nothing is written
        warnings(pinned)
    message = str(error.value)
    assert "was built with --pin-python on Python 3.11" in message and "Rebuild without --pin-python" in message
    assert "Or pass --app APP:ATTR to rebuild it inside the image, with the image's Python" in message
    assert message.endswith("Nothing was written.")


# --------------------------------------------------------------------------- CLI


def test_cli_prints_to_stdout_or_writes_files(repo: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["deploy", str(repo), "--k8s"])
    assert result.exit_code == 0, result.output
    assert [d["kind"] for d in yaml.safe_load_all(result.stdout)] == ["Deployment", "Service"]
    result = runner.invoke(cli, ["deploy", str(repo), "--k8s", "--kserve", "--storage-uri", "s3://b/x"])
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout)]  # pipeable into `kubectl apply -f -`
    assert kinds == ["Deployment", "Service", "InferenceService"]

    out = tmp_path / "deploy"
    result = runner.invoke(
        cli, ["deploy", str(repo), "--docker", "--k8s", "--kserve", "--prebuilt", "--context", str(repo.parent),
              "-o", str(out), "--storage-uri", "s3://b/x"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [DOCKERFILE, "Dockerfile.dockerignore", K8S_FILE, KSERVE_FILE]
    )
    assert "docker build -f " + str(out / DOCKERFILE) in (out / DOCKERFILE).read_text()


def test_cli_errors_are_click_style(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["deploy", str(tmp_path), "--k8s"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "holds no model" in result.output


def test_commands_are_registered() -> None:
    out = subprocess.run([sys.executable, "-m", "repogen", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("serve", "infer", "deploy"):
        assert re.search(rf"^\s+{command}\s", out, flags=re.MULTILINE), out


def test_building_in_the_image_needs_the_wheel_in_the_context(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"expected -o DIR \(under --context\). Or leave --app out"):
        generate(repo, DeployOptions(docker=True, app=QUICKSTART, context=ROOT))
    with pytest.raises(UsageError, match="the deployment directory .* is outside the Docker build context"):
        generate(repo, DeployOptions(docker=True, app=QUICKSTART, context=ROOT, output_dir=tmp_path))
    out = generate(repo, DeployOptions(docker=True, app=QUICKSTART, context=ROOT, output_dir=ROOT / "deploy"))
    assert list(out.binaries) == ["triton_repogen-0.1.0-py3-none-any.whl"]
    again = generate(repo, DeployOptions(docker=True, app=QUICKSTART, context=ROOT, output_dir=ROOT / "deploy"))
    assert again.binaries == out.binaries  # deterministic: rewriting the files changes nothing


def test_the_wheel_carries_the_installed_metadata_even_behind_a_checkouts_egg_info(tmp_path, monkeypatch) -> None:
    """`python -m repogen` in a checkout puts setuptools' triton_repogen.egg-info (PKG-INFO, no METADATA) first."""
    shadow = tmp_path / "triton_repogen.egg-info"
    shadow.mkdir()
    (shadow / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: triton-repogen\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    archive = zipfile.ZipFile(io.BytesIO(wheel_bytes()))
    metadata = archive.read("triton_repogen-0.1.0.dist-info/METADATA").decode()
    assert "Name: triton-repogen" in metadata and "Requires-Dist: tritonclient[all]" in metadata  # its dependencies
    assert "repogen = repogen.cli:main" in archive.read("triton_repogen-0.1.0.dist-info/entry_points.txt").decode()


def test_every_generated_probe_has_a_timeout_sized_for_a_loaded_node(repo: Path) -> None:
    """Kubernetes' default timeoutSeconds (1 s) would fail a healthy server's probes on a busy node: each probe of
    each form says its own, at least LOADED_NODE_S; the liveness check adds time per model."""
    from repogen.deploy.files import COMPOSE_FILE
    from repogen.deploy.probe import LOADED_NODE_S

    models = len(read_repository(repo).models)
    liveness = min(60, LOADED_NODE_S + 2 * models)
    for restrict in (DEFAULT_RESTRICTED, ()):  # startup/readiness as an exec (health needs the key) and an httpGet
        container = _container(_k8s(repo, restrict=restrict))
        timeouts = {which: container[which].get("timeoutSeconds") for which in PROBES}
        assert timeouts == {"startupProbe": LOADED_NODE_S, "readinessProbe": LOADED_NODE_S, "livenessProbe": liveness}
    out = generate(repo, DeployOptions(kserve=True, docker=True, compose=True, image="reg/qs:2", context=repo.parent))
    isvc = yaml.safe_load(out.files[KSERVE_FILE])
    assert isvc["spec"]["predictor"]["containers"][0]["livenessProbe"]["timeoutSeconds"] == liveness
    assert f"HEALTHCHECK --interval=10s --timeout={liveness}s " in out.files[DOCKERFILE]
    service = next(iter(yaml.safe_load(out.files[COMPOSE_FILE])["services"].values()))
    assert service["healthcheck"]["timeout"] == f"{liveness}s"


PROBES = ("startupProbe", "readinessProbe", "livenessProbe")
