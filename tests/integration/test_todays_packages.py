"""Today's packages on today's containers, as a new user meets them, on the real server.

* A fresh venv with scikit-learn 1.9.1 (no Python 3.10 wheel): `repogen build` with defaults succeeds for
  the containers it can reach (24.11+, Python 3.12) with one warning, `repogen serve` picks the embedded
  pairing that serves it (2.51 + Python 3.12) by itself, and `repogen infer` answers over HTTP and gRPC.
* A shipped wheel whose native library links CUDA 12 (made here): the CUDA 13 containers (25.08+) are left
  out by default, refused when named, and the repository serves where it can.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from repogen.server.running.process import free_ports
from repogen.testing.answers import assert_floats_close
from repogen.testing.builders import checkout_root, ensure_builder_venv
from repogen.testing.client import infer
from repogen.testing.packages_app import builder_python
from repogen.testing.prerequisites import require_tool
from repogen.triton.releases import NEWEST, RELEASES

pytestmark = pytest.mark.integration

ROOT = checkout_root()
SKLEARN = "scikit-learn==1.9.1"  # numpy >= 2.3, scipy >= 1.16 and scikit-learn >= 1.8 dropped Python 3.10
SAMPLE = [[5.1, 3.5, 1.4, 0.2], [6.4, 3.2, 4.5, 1.5]]


def _run(venv: Path, cache: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**(env or os.environ), "REPOGEN_CACHE_DIR": str(cache)}
    command = [str(venv / "bin" / "python"), "-m", "repogen", *args]
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900)


def _warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("Warning:")]


@pytest.fixture(scope="module")
def sklearn_venv(repogen_cache_dir: Path) -> Path:
    """A new user's venv: repogen and today's scikit-learn, nothing else of theirs."""
    return ensure_builder_venv(builder_python(), repogen_cache_dir, (SKLEARN,))


def test_a_new_user_with_todays_scikit_learn_builds_serves_and_gets_answers(
    sklearn_venv: Path, repogen_cache_dir: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    built = _run(sklearn_venv, repogen_cache_dir, "build", "tests/apps/todays/app.py:models", "-o", str(repo))
    assert built.returncode == 0, built.stderr
    (warning,) = _warnings(built)
    last_310 = [r for r in RELEASES if r.python == "3.10"][-1]
    assert warning.startswith(
        f"Warning: not targeting NGC 23.10-{last_310.ngc} (Python 3.10): scikit-learn 1.9.1 "
        "(installed here) has no wheel for Python 3.10 on x86_64; scikit-learn 1.7.2 has one"
    )
    assert f"The repository serves NGC 24.11-{NEWEST.ngc} (Python 3.12)" in warning
    assert json.loads((repo / "repogen.manifest.json").read_text())["pythons"] == ["3.12"]
    assert sorted(p.name for p in (repo / "Iris" / "1" / "packages").iterdir()) == [
        "cp312-x86_64", "cp312-x86_64.files.json"
    ]  # fmt: skip

    http, grpc, metrics = free_ports(3)
    serve = subprocess.Popen(
        [str(sklearn_venv / "bin" / "python"), "-m", "repogen", "serve", str(repo), "--embedded", "--http-port",
         str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics)],
        cwd=ROOT, env={**os.environ, "REPOGEN_CACHE_DIR": str(repogen_cache_dir)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert serve.stdout is not None
        deadline = time.monotonic() + 300
        for line in serve.stdout:
            lines.append(line.rstrip())
            if " ready (pid " in line or time.monotonic() > deadline:
                break
        output = "\n".join(lines)
        assert (
            f"{repo} ships for NGC 24.11+ (Python 3.12) only, so the embedded server runs it on Python 3.12" in output
        )
        assert "Serving with tritonserver 2.51.0 + Python 3.12 (stands in for NGC 24.11+)." in output
        assert "serving 1 model(s)" in output and ": Iris" in output, output
        expected = _expected(sklearn_venv)
        where = SimpleNamespace(http_url=f"127.0.0.1:{http}", grpc_url=f"127.0.0.1:{grpc}")
        for protocol in ("http", "grpc"):
            answer = infer(protocol, where, "Iris", {"x": np.array(SAMPLE, np.float32)})
            assert answer["species"].ravel().tolist() == expected["species"], protocol
            assert_floats_close(answer["p"], np.asarray(expected["p"], answer["p"].dtype), f"Iris p over {protocol}")
        cli = _run(sklearn_venv, repogen_cache_dir, "infer", "Iris", "--url", f"127.0.0.1:{http}", "--input",
                   f"x={json.dumps(SAMPLE[:1])}")  # fmt: skip
        assert cli.returncode == 0 and "species" in cli.stdout, cli.stdout + cli.stderr
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()


def _expected(venv: Path) -> dict[str, list]:
    """What the builder's own scikit-learn answers for SAMPLE."""
    code = (
        "import json, sys; sys.path.insert(0, 'tests/apps/todays'); import numpy as np; from app import ESTIMATOR; "
        f"x = np.array({SAMPLE}, np.float32); "
        "print(json.dumps({'species': ESTIMATOR.predict(x).tolist(), 'p': ESTIMATOR.predict_proba(x).tolist()}))"
    )
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --------------------------------------------------------------------------- a CUDA 12 wheel


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _cuda_wheel(directory: Path) -> Path:
    """cudaprobe 1.0: pure-Python code beside a library whose DT_NEEDED is libcudart.so.12 (linked to a stub)."""
    work = directory / "work"
    work.mkdir(parents=True)
    (work / "cudart.c").write_text("int cudaRuntimeGetVersion(int *v) { *v = 12080; return 0; }\n")
    (work / "probe.c").write_text("int probe_device(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o", str(work / "libcudart.so.12"),
                    str(work / "cudart.c")], check=True)  # fmt: skip
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", str(work / "libprobe_cuda.so"),
                    str(work / "probe.c"), f"-L{work}", "-l:libcudart.so.12"], check=True)  # fmt: skip
    files = {
        "cudaprobe/__init__.py": b"def triple(x):\n    return x * 3\n",
        "cudaprobe/libprobe_cuda.so": (work / "libprobe_cuda.so").read_bytes(),
        "cudaprobe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: cudaprobe\nVersion: 1.0\n",
        "cudaprobe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: repogen-tests\nRoot-Is-Purelib: false\n"
        b"Tag: py3-none-manylinux_2_17_x86_64\n",
    }
    wheel = directory / "wheels" / "cudaprobe-1.0-py3-none-manylinux_2_17_x86_64.whl"
    wheel.parent.mkdir()
    record = "\n".join([*(_record_line(n, d) for n, d in files.items()), "cudaprobe-1.0.dist-info/RECORD,,", ""])
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in [*files.items(), ("cudaprobe-1.0.dist-info/RECORD", record.encode())]:
            archive.writestr(name, data)
    return wheel


@pytest.fixture(scope="module")
def cuda_env(repogen_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A builder venv holding cudaprobe, and the environment whose pip finds its wheel (a local find-links)."""
    require_tool("gcc", "gcc", "link a library whose DT_NEEDED is libcudart.so.12")
    wheel = _cuda_wheel(tmp_path_factory.mktemp("cudaprobe"))
    links = " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS", ""), str(wheel.parent)]))
    env = {**os.environ, "PIP_FIND_LINKS": links}
    saved = os.environ.get("PIP_FIND_LINKS")
    os.environ["PIP_FIND_LINKS"] = links  # ensure_builder_venv's pip install reads it too
    try:
        venv = ensure_builder_venv(builder_python(), repogen_cache_dir, ("cudaprobe==1.0",))
    finally:
        if saved is None:
            os.environ.pop("PIP_FIND_LINKS")
        else:
            os.environ["PIP_FIND_LINKS"] = saved
    return venv, env


def test_a_cuda_12_library_leaves_the_cuda_13_containers_out_and_serves_on_the_others(
    cuda_env: tuple[Path, dict[str, str]], repogen_cache_dir: Path, tmp_path: Path, serve: object
) -> None:
    venv, env = cuda_env
    app = "tests/apps/todays/cuda_app.py:models"
    cuda13 = [r for r in RELEASES if r.cuda == 13]
    built = _run(venv, repogen_cache_dir, "build", app, "-o", str(tmp_path / "repo"), env=env)
    assert built.returncode == 0, built.stderr
    (warning,) = _warnings(built)
    assert warning.startswith(f"Warning: not targeting NGC {cuda13[0].ngc}-{cuda13[-1].ngc} (Python 3.12): cudaprobe "
                              "1.0 (libcudart.so.12 in cudaprobe/libprobe_cuda.so) needs CUDA 12.")  # fmt: skip
    manifest = json.loads((tmp_path / "repo" / "repogen.manifest.json").read_text())
    assert {tag: tree.get("cuda") for tag, tree in manifest["packages"].items()} == {
        "Probe/1/packages/cp310-x86_64": [12], "Probe/1/packages/cp312-x86_64": [12]
    }  # fmt: skip

    named = _run(venv, repogen_cache_dir, "build", app, "-o", str(tmp_path / "named"), "--triton-release",
                 cuda13[0].ngc, env=env)  # fmt: skip
    assert named.returncode == 1 and not (tmp_path / "named").exists()
    app_file = app.split(":")[0]
    declared = Path(app_file).read_text().splitlines().index("@models.model(") + 1
    assert (f"Error: {app_file}:{declared}: model 'Probe' ships cudaprobe 1.0 (libcudart.so.12 in "
            f"cudaprobe/libprobe_cuda.so): built for CUDA 12, but {cuda13[0].label} has CUDA 13") in named.stderr, \
        named.stderr  # fmt: skip

    validate = _run(venv, repogen_cache_dir, "validate", str(tmp_path / "repo"), "--triton-release", NEWEST.ngc)
    assert validate.returncode == 1 and "packages built for CUDA 12 (recorded at build)" in validate.stderr
    deploy = _run(venv, repogen_cache_dir, "deploy", str(tmp_path / "repo"), "--docker", "--context", str(tmp_path))
    assert deploy.returncode == 1, deploy.stdout  # the newest release by default: CUDA 13
    assert f"has CUDA {NEWEST.cuda}" in deploy.stderr and "Nothing was written" in deploy.stderr, deploy.stderr

    server = serve(tmp_path / "repo")  # type: ignore[operator]
    for protocol in ("http", "grpc"):
        answer = infer(protocol, server, "Probe", {"x": np.array([[1.0, 2.0]], np.float32)})
        assert answer["y"].tolist() == [[3.0, 6.0]], protocol
