"""Shipped packages under every way a stock server meets a repository, and what refuses them.

NONE mode is in ``test_packages.py`` (on every pairing). Here, on the full pairing: POLL (which
would load a model twice if anything wrote into its directory), EXPLICIT, a read-only bind mount,
a model directory copied alone (as object storage localizes it), a tampered shipped file (refused,
naming it, by the server and by ``repogen validate``), and a build refused at build time for a
version that has no wheel for the containers' Python 3.10.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from repogen.testing.builders import BuildWithError
from repogen.testing.client import infer
from repogen.testing.packages_app import TOO_NEW, build_packages_app
from repogen.testing.prerequisites import CAP_SYS_ADMIN, require_capability
from repogen.triton.releases import RELEASES

pytestmark = pytest.mark.integration

X = {"x": np.array([[0.5, -3.0, 0.01, 2.0]])}
TOLERANT = ("--exit-on-error=false", "--strict-readiness=false")
POLLED = "Polling model repository"  # tritonserver's line for each poll, at --log-verbose=1


@pytest.fixture(scope="module")
def repo(repogen_cache_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("layouts") / "repo"
    build_packages_app(repogen_cache_dir, out)
    return out


def snapshot(root):
    """Every path under ``root`` with its mtime: anything a server writes shows up here."""
    return {
        os.path.join(d, name): os.lstat(os.path.join(d, name)).st_mtime_ns
        for d, dirs, files in os.walk(root)
        for name in (*dirs, *files)
    }


def loads_of(server, model):
    return server.log_text().count(f"successfully loaded '{model}'")


def test_poll_mode_loads_each_model_once_and_nothing_is_written(repo, triton_server):
    before = snapshot(repo)
    poll = ("--model-control-mode=poll", "--repository-poll-secs=1", "--log-verbose=1")  # verbose: it logs each poll
    server = triton_server(repo, extra_args=poll)
    assert infer("grpc", server, "Forest", X)["label"].shape == (1, 1)
    polled, deadline = server.log_text().count(POLLED), time.monotonic() + 120
    while server.log_text().count(POLLED) < polled + 4:  # four polls: a changed mtime would reload the model
        assert time.monotonic() < deadline, f"tritonserver polled {server.log_text().count(POLLED) - polled} times"
        time.sleep(0.2)
    assert infer("http", server, "Forest", X)["label"].shape == (1, 1)
    assert {m: loads_of(server, m) for m in ("Forest", "Onnx", "Yaml")} == {"Forest": 1, "Onnx": 1, "Yaml": 1}
    assert snapshot(repo) == before


def test_explicit_mode_loads_what_is_asked(repo, triton_server):
    server = triton_server(repo, extra_args=("--model-control-mode=explicit", "--load-model=Forest"))
    assert infer("http", server, "Forest", X)["proba"].shape == (1, 2)
    states = {m["name"]: m.get("state", "") for m in server.models_status()}
    assert states["Forest"] == "READY" and states.get("Onnx", "") != "READY"


def test_a_model_directory_copied_alone_serves(repo, triton_server, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    subprocess.run(["cp", "-a", str(repo / "Yaml"), str(alone)], check=True)  # no manifest, no other model
    server = triton_server(alone)
    text = np.array([[b"a: 2\nb: 3"]], dtype=object)
    assert infer("grpc", server, "Yaml", {"text": text})["total"].tolist() == [[5.0]]


def test_a_read_only_bind_mount_serves(repo, triton_server, tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    require_capability(CAP_SYS_ADMIN, "bind-mount the repository read-only")
    done = subprocess.run(["mount", "--bind", "-o", "ro", str(repo), str(mount)], capture_output=True, text=True)
    assert done.returncode == 0, f"mount --bind -o ro {repo} {mount} failed: {done.stderr.strip()}"
    try:
        assert subprocess.run(["touch", str(mount / "x")], capture_output=True).returncode != 0  # really read-only
        server = triton_server(mount)
        assert infer("http", server, "Forest", X)["label"].shape == (1, 1)
        server.stop()
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=False)  # detached even while a failed server holds it


def test_a_tampered_shipped_file_is_refused_naming_it(repo, triton_server, tmp_path):
    copy = tmp_path / "tampered"
    subprocess.run(["cp", "-a", str(repo), str(copy)], check=True)
    target = copy / "Forest" / "1" / "packages" / "cp310-x86_64" / "sklearn" / "__init__.py"
    data = target.read_bytes()
    target.unlink()  # the file is a hard link into the wheel cache: write a new one, never through the link
    target.write_bytes(data + b"\n# edited\n")
    validate = subprocess.run([sys.executable, "-m", "repogen", "validate", str(copy)], capture_output=True, text=True)
    assert validate.returncode != 0
    assert "Forest/1/packages/cp310-x86_64" in validate.stdout + validate.stderr, validate.stdout + validate.stderr
    assert "sklearn/__init__.py" in validate.stdout + validate.stderr
    server = triton_server(copy, extra_args=TOLERANT)
    status = {m["name"]: (m.get("state", ""), m.get("reason", "")) for m in server.models_status()}
    state, reason = status["Forest"]
    assert state == "UNAVAILABLE"
    assert "refusing the packages in" in reason and "changed: sklearn/__init__.py" in reason, reason
    assert status["Yaml"][0] == "READY"


def test_a_version_without_a_wheel_for_python_3_10_leaves_those_containers_out(repogen_cache_dir, tmp_path):
    last_310 = [r.ngc for r in RELEASES if r.python == "3.10"][-1]
    built = build_packages_app(repogen_cache_dir, tmp_path / "narrowed", app=TOO_NEW)
    (warning,) = [line for line in built.stderr.splitlines() if line.startswith("Warning:")]
    assert warning.startswith(
        f"Warning: not targeting NGC 23.10-{last_310} (Python 3.10): networkx 3.5 (installed here) has no wheel for "
        "Python 3.10 on x86_64; networkx 3.4.2 has one. The repository serves NGC "
    ), warning
    assert "Pass --all-containers to make this an error" in warning
    assert sorted(os.listdir(tmp_path / "narrowed" / "Graph" / "1" / "packages")) == [
        "cp312-x86_64", "cp312-x86_64.files.json"
    ]  # fmt: skip
    assert json.loads((tmp_path / "narrowed" / "repogen.manifest.json").read_text())["pythons"] == ["3.12"]
    shutil.rmtree(tmp_path / "narrowed")
    with pytest.raises(BuildWithError) as refused:  # who needs the older containers says so
        build_packages_app(repogen_cache_dir, tmp_path / "refused", "--all-containers", app=TOO_NEW)
    message = str(refused.value)
    assert "networkx 3.5 (the version installed where the build runs) has no wheel for Python 3.10" in message
    assert f"NGC 23.10-{last_310}" in message and "networkx==3.4.2" in message, message
    assert not (tmp_path / "refused").exists()
