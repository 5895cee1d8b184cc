"""The repository never lies, proven on the real server.

One server loads a repository in which one payload has a flipped byte, one model's sidecar says it
was built by another Python and one model needs a package the numpy-only server venv lacks: each of
those is UNAVAILABLE with a reason that names the file or distribution and the fix, while the
healthy models (including numpy-2-built arrays, served by numpy 1.26) answer. Then a repository
that survived SIGKILLed builds is served whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repogen.ondisk.validate import validate_repository
from repogen.runtime import payload as runtime_payload
from repogen.runtime.errors import PayloadError
from repogen.testing.client import PROTOCOLS, infer

ROOT = Path(__file__).resolve().parents[2]
APP = "tests/apps/integrity/app.py:models"
SERVER_ARGS = ["--exit-on-error=false", "--strict-readiness=false"]
SERVED_MODELS = 10  # loading 30 Python models takes ~30 s on 2 cores
X = np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _claim_python(repo: Path, model: str, python: str) -> None:
    """As if built with --pin-python by another interpreter: sidecar and manifest agree, only the Python differs."""
    sidecar = repo / model / "1" / "model.json"
    meta = json.loads(sidecar.read_text())
    meta["build"]["python"] = python
    meta["portable"] = False
    sidecar.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    manifest_path = repo / "repogen.manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][f"{model}/1/model.json"] = _sha(sidecar.read_bytes())
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _other_python(triton_install) -> str:
    return "3.12" if triton_install.venv.python_version == "3.10" else "3.10"


@pytest.fixture(scope="module")
def damaged(serve, cli_build, tmp_path_factory, triton_install, damaged_on_purpose):
    repo = tmp_path_factory.mktemp("integrity") / "repo"
    cli_build(APP, repo, "--provided", "click")  # the image is said to have click: recorded, not shipped
    _flip_byte(damaged_on_purpose(repo / "Corrupt" / "1" / "model.pkl"))
    _claim_python(repo, "OtherPython", _other_python(triton_install))
    return repo, serve(repo, extra_args=SERVER_ARGS)


def _status(server) -> dict[str, tuple[str, str]]:
    return {m["name"]: (m.get("state", ""), m.get("reason", "")) for m in server.models_status()}


@pytest.mark.integration
def test_flipped_byte_makes_only_that_model_unavailable(damaged):
    repo, server = damaged
    state, reason = _status(server)["Corrupt"]
    payload = repo / "Corrupt" / "1" / "model.pkl"
    assert state == "UNAVAILABLE"
    for text in (reason, server.log_text()):
        assert f"refusing to unpickle {payload}: sha256 mismatch, expected " in text, text
        assert f"found {_sha(payload.read_bytes())}" in text
    assert _status(server)["Good"] == ("READY", "")
    for protocol in PROTOCOLS:
        np.testing.assert_array_equal(infer(protocol, server, "Good", {"x": X})["y"], X * 2)


@pytest.mark.integration
def test_pinned_payload_of_another_python_fails_to_load_with_what_to_do(damaged, triton_install):
    _, server = damaged
    state, reason = _status(server)["OtherPython"]
    assert state == "UNAVAILABLE"
    serving = triton_install.venv.python_version
    assert f"model 'OtherPython' was built with Python {_other_python(triton_install)}" in reason, reason
    assert f"this server runs Python {serving}; it was built with --pin-python" in reason
    assert "Rebuild without --pin-python" in reason
    assert server.is_running()  # refused before unpickling: no stub crash, no server crash


@pytest.mark.integration
def test_missing_package_is_named_by_distribution(damaged):
    repo, server = damaged
    state, reason = _status(server)["NeedsClick"]
    requirement = json.loads((repo / "NeedsClick" / "1" / "model.json").read_text())["requirements"]["click"]
    assert requirement.startswith("click==")
    assert state == "UNAVAILABLE"
    assert "needs module 'click'" in reason and f"install distribution '{requirement}'" in reason, reason


@pytest.mark.integration
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_numpy2_built_arrays_serve_on_numpy_1_26(damaged, protocol, triton_install):
    repo, server = damaged
    assert json.loads((repo / "Numpy2Arrays" / "1" / "model.json").read_text())["build"]["numpy"].startswith("2.")
    assert np.__version__.startswith("2.")
    assert "numpy-1.26.4.dist-info" in os.listdir(
        next(Path(triton_install.venv.path).glob("lib/python*/site-packages"))
    )
    out = infer(protocol, server, "Numpy2Arrays", {"x": X})
    np.testing.assert_allclose(out["y"], X * np.array([1, 2, 3, 4]) + np.arange(4) * 0.5)


# -- what the runtime agrees to unpickle (no server needed) -----------------------------------------


def _one_version(tmp_path: Path, cli_build) -> Path:
    repo = tmp_path / "repo"
    cli_build(APP, repo)
    return repo / "Good" / "1"


def test_runtime_unpickles_only_the_listed_payload_inside_its_version_dir(tmp_path, cli_build):
    version_dir = _one_version(tmp_path, cli_build)
    sidecar = version_dir / "model.json"
    built = sidecar.read_text()
    meta = json.loads(built)
    for name in ("../../Corrupt/1/model.pkl", "/etc/passwd", "..", "model.json", ""):
        meta["payload"]["file"] = name
        sidecar.write_text(json.dumps(meta))
        with pytest.raises(PayloadError, match="(?i)rebuild the repository"):
            runtime_payload.load_payload(str(version_dir), "Good")
    sidecar.write_text(built)  # as built again: the session's bytecode gate reads every payload left behind


def test_runtime_cross_checks_the_manifest(tmp_path, cli_build):
    version_dir = _one_version(tmp_path, cli_build)
    built = (version_dir / "model.pkl").read_bytes()
    (version_dir / "model.pkl").write_bytes(b"not the build's pickle")
    sidecar = version_dir / "model.json"
    meta = json.loads(sidecar.read_text())
    meta["payload"]["sha256"] = _sha(b"not the build's pickle")  # sidecar edited to match: the manifest disagrees
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(PayloadError, match=r"repogen.manifest.json lists Good/1/model.pkl with sha256 [0-9a-f]{64}"):
        runtime_payload.load_payload(str(version_dir), "Good")
    (version_dir.parent.parent / "repogen.manifest.json").write_text("{not json")
    with pytest.raises(PayloadError, match="is not a readable repogen manifest"):
        runtime_payload.load_payload(str(version_dir), "Good")
    # as built again: the session's bytecode gate reads every payload left behind
    (version_dir / "model.pkl").write_bytes(built)


# -- a repository that survived SIGKILLed builds still serves ---------------------------------------


def _kill_during(phase: str, output: Path, generation: int) -> None:
    """Park a build at ``phase`` (the writer's test hook), then SIGKILL it."""
    env = {**os.environ, "INTEGRITY_GENERATION": str(generation)}
    env |= {"REPOGEN_WRITER_TRACE": "1", "REPOGEN_WRITER_PAUSE": phase}
    command = [sys.executable, "-m", "repogen", "build", "tests/apps/integrity/many.py:models", "-o", str(output)]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.strip() == f"repogen-writer: {phase}":
            break
    proc.kill()
    proc.wait()


@pytest.mark.integration
def test_repository_survives_sigkilled_builds_and_serves(serve, cli_build, tmp_path, monkeypatch):
    # 30-model kill trials: tests/unit/ondisk/test_atomic_build.py
    monkeypatch.setenv("INTEGRITY_MODELS", str(SERVED_MODELS))
    output = tmp_path / "repo"
    cli_build("tests/apps/integrity/many.py:models", output)  # generation 1
    # Killed before the swap: generation 1 stays. Killed right after it: generation 4 is in place and
    # its staging directory (holding generation 1) is left behind for the next build to remove.
    for generation, phase in enumerate(("writing", "exchange", "exchanged", "locked"), start=2):
        _kill_during(phase, output, generation)
    assert validate_repository(output) == []
    assert len([p for p in tmp_path.iterdir() if p.name.startswith(".repo.repogen-")]) >= 1
    server = serve(output)
    states = {m["name"]: m["state"] for m in server.models_status()}
    assert states == {f"M{i:02d}": "READY" for i in range(SERVED_MODELS)}
    out = infer("http", server, "M03", {"x": np.array([[1.0]], dtype=np.float32)})
    assert out["y"].tolist() == [[4003.0]]  # generation 4, model 3
