"""Every flag conflict of every command is a usage error: exit status 2, the command's usage line, and the message.

Library code raises ``repogen.errors.UsageError``; ``repogen.cli`` shows it as click shows its own usage
errors. None of these needs a server: each is refused before anything starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.errors import RepogenError, UsageError

ROOT = Path(__file__).resolve().parents[3]
APP = "examples/quickstart/app.py:models"
NO_PORTS = ("--http-port", "0", "--grpc-port", "0", "--metrics-port", "0")
URL = ("--url", "127.0.0.1:1")

CONFLICTS = {
    "build --all-containers --triton-release": (
        ("build", APP, "-o", "{context}/out", "--all-containers", "--triton-release", "24.10"),
        "--all-containers requires every NGC release from 23.10, --triton-release names one: pass one or the other.",
    ),
    "serve --reload on a directory": (
        ("serve", "{repo}", "--reload"),
        "--reload, --output and --app-dir rebuild from an app; '{repo}' is a directory",
    ),
    "serve --model-control-mode none --reload": (
        ("serve", APP, "--model-control-mode", "none", "--reload"),
        "--reload and --model load models explicitly; drop --model-control-mode none.",
    ),
    "serve one port twice": (
        ("serve", "{repo}", "--http-port", "18123", "--grpc-port", "18123"),
        "--http-port and --grpc-port are both 18123; each endpoint needs its own port (0 picks a free one).",
    ),
    "serve -- an option serve sets": (
        ("serve", "{repo}", *NO_PORTS, "--", "--model-repository=/models"),
        "tritonserver argument '--model-repository=/models' after `--`: repogen serve sets --model-repository "
        "itself; use TARGET instead.",
    ),
    "serve --model -- --load-model": (
        ("serve", "{repo}", "--model", "AddSub", *NO_PORTS, "--", "--load-model=Shout"),
        "repogen serve sets --load-model itself; use --model NAME instead.",
    ),
    "serve --tritonserver --embedded": (
        ("serve", "{repo}", "--tritonserver", "/bin/true", "--embedded", *NO_PORTS),
        "--tritonserver runs the binary you name (with its own Python); --triton-release/--server-python/"
        "--embedded select the embedded server. Pass one or the other.",
    ),
    "serve --verify-key on an app": (
        ("serve", APP, "--verify-key", "{repo}/repogen.manifest.json"),
        "--verify-key checks a built, signed repository; '" + APP + "' is an app.",
    ),
    "sign with neither --key nor --sigstore": (
        ("sign", "{repo}"),
        "expected one of --key KEY.pem (an EC key, offline) or --sigstore (keyless)",
    ),
    "sign --certificate-chain without --certificate": (
        (
            "sign",
            "{repo}",
            "--key",
            "{repo}/repogen.manifest.json",
            "--certificate-chain",
            "{repo}/repogen.manifest.json",
        ),
        "--certificate-chain goes with --certificate",
    ),
    "verify with nothing to verify against": (
        ("verify", "{repo}"),
        "expected one of --key PUB.pem, --certificate-chain CA.pem, --sigstore-identity ID",
    ),
    "tune --tritonserver --triton-release": (
        ("tune", "{repo}", "--tritonserver", "/bin/true", "--triton-release", "24.10"),
        "--tritonserver runs the binary you name (with its own Python); --triton-release/--server-python select "
        "the embedded server. Pass one or the other.",
    ),
    "tune a release it cannot embed": (
        ("tune", "{repo}", "--triton-release", "24.11"),
        "--triton-release 2.52.0: tune runs the embedded server, which ships only 2.39.0, 2.41.0, 2.51.0.",
    ),
    "tune a malformed --shape": (
        ("tune", "{repo}", "--shape", "x"),
        "--shape 'x' is not NAME:D1,D2,...; expected e.g. --shape a:16 or --shape x:3,224.",
    ),
    "inspect --json --mermaid": (
        ("inspect", "{repo}", "--json", "--mermaid"),
        "choose one of --json, --mermaid and --sbom",
    ),
    "deploy with no target": (
        ("deploy", "{repo}"),
        "nothing to generate; expected at least one of --docker, --k8s, --kserve, --compose.",
    ),
    "deploy --prebuilt --app": (
        ("deploy", "{repo}", "--docker", "--prebuilt", "--app", APP),
        "--prebuilt copies {repo} into the image as built, --app " + APP + " rebuilds it inside the image; "
        "expected one of them. Leave --app out to copy the repository (the default).",
    ),
    "deploy --app without -o": (
        ("deploy", "{repo}", "--docker", "--app", APP),
        "rebuilding the repository inside the image (--app) installs repogen from a wheel written beside the "
        "Dockerfile, inside the build context; expected -o DIR (under --context).",
    ),
    "deploy -o outside --context": (
        ("deploy", "{repo}", "--docker", "--app", APP, "-o", "{elsewhere}", "--context", "{context}"),
        "the deployment directory {elsewhere}/",
    ),
    "deploy --app not APP:ATTR": (
        ("deploy", "{repo}", "--docker", "--app", "app.py", "-o", "{context}/deploy", "--context", "{context}"),
        "--app 'app.py' is not APP:ATTR; expected what `repogen build` takes",
    ),
    "deploy --kserve --image --storage-uri": (
        ("deploy", "{repo}", "--kserve", "--image", "registry.example.com/m:1", "--storage-uri", "s3://bucket/m"),
        "--image and --storage-uri both given for --kserve; expected one",
    ),
    "deploy --restrict on a release that cannot": (
        ("deploy", "{repo}", "--k8s", "--triton-release", "23.10"),
        "tritonserver 2.39.0 (NGC 23.10) cannot keep its HTTP APIs behind a key",
    ),
    "deploy --max-replicas below --replicas": (
        ("deploy", "{repo}", "--k8s", "--replicas", "3", "--max-replicas", "2"),
        "--max-replicas 2 is below --replicas 3 (the minimum the autoscaler keeps); expected at least that. "
        "Raise --max-replicas or lower --replicas.",
    ),
    "deploy --memory-request over --memory-limit": (
        ("deploy", "{repo}", "--k8s", "--memory-request", "8Gi", "--memory-limit", "4Gi"),
        "--memory-request 8Gi exceeds the memory limit 4Gi; Kubernetes rejects that.",
    ),
    "deploy --memory-limit below --shm-size": (
        ("deploy", "{repo}", "--k8s", "--memory-limit", "600Mi", "--shm-size", "1Gi"),
        "--memory-limit 600Mi cannot hold /dev/shm (1Gi, memory-backed, counted against the limit) plus the server",
    ),
    "deploy a malformed quantity": (
        ("deploy", "{repo}", "--k8s", "--memory-limit", "lots"),
        "--memory-limit 'lots' is not a memory quantity",
    ),
    "deploy --target-cpu-utilization out of range": (
        ("deploy", "{repo}", "--k8s", "--max-replicas", "2", "--target-cpu-utilization", "0"),
        "Invalid value for '--target-cpu-utilization'",
    ),
    "infer --stream over http": (
        ("infer", "AddSub", "--stream", "--protocol", "http", "-i", "a=1", *URL),
        "--stream needs gRPC (Triton streams decoupled responses over gRPC only); drop --protocol http.",
    ),
    "infer an input twice": (
        ("infer", "AddSub", "-i", "a=1", "-i", "a=2", *URL),
        "input 'a' is given twice (--input a=1 and --input a=2); pass each input once.",
    ),
    "infer an input without a value": (("infer", "AddSub", "-i", "a", *URL), "--input 'a' is not NAME=VALUE"),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("usage") / "repo"
    build_app(str(ROOT / APP), out)
    return out


@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_flag_conflicts_exit_2_with_the_usage_line(
    case: str, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    places = {"repo": repo, "context": tmp_path / "context", "elsewhere": tmp_path / "elsewhere"}
    places["context"].mkdir()
    args, message = CONFLICTS[case]
    result = CliRunner().invoke(cli, [a.format(**places) for a in args], prog_name="repogen")
    command = args[0]
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Usage: repogen {command} [OPTIONS]"), result.stderr
    assert f"Try 'repogen {command} --help' for help." in result.stderr
    assert message.format(**places) in " ".join(result.stderr.split()), result.stderr
    assert result.stderr.count("Error:") == 1 and "Traceback" not in result.output


def test_the_library_raises_one_usage_class() -> None:
    assert issubclass(UsageError, RepogenError) and UsageError.exit_code == 2
