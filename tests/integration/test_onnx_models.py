"""Exported ONNX networks (``models.onnx``) served on a stock server that has only the Python backend.

``tests/apps/onnx`` makes its graphs with ``onnx`` at build time and declares them with
``backend="python"``: the build (in the third-party-packages builder venv, which has onnx and
onnxruntime) writes each graph as ``<model>/<version>/model.onnx`` and ships onnxruntime inside the
repository. The pairing under test serves it from its numpy-only venv; every answer, over HTTP and
gRPC, equals onnxruntime's own on the app's source graph (``expected.py``, run by the builder's Python), so a build
that wrote another graph than the app's fails.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import time
import types

import numpy as np
import pytest
from google.protobuf import text_format
from serve_cli import ServeProcess

from repogen.errors import TritonServerError
from repogen.ondisk.validate import validate_repository
from repogen.testing.answers import assert_floats_close
from repogen.testing.builders import checkout_root, ensure_builder_venv
from repogen.testing.client import PROTOCOLS, InferenceServerException, infer
from repogen.testing.packages_app import BUILDER_PACKAGES, build_packages_app, builder_python
from repogen.triton.proto import model_config_pb2 as mc

pytestmark = pytest.mark.integration

APP = "tests/apps/onnx/app.py:models"
NATIVE = checkout_root() / "tests" / "golden" / "onnx" / "expected"  # backend: "onnxruntime", as built
SERVED = (("Affine", 1), ("Affine", 2), ("Mixed", 1), ("External", 1))


@pytest.fixture(scope="module")
def built(repogen_cache_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    build_packages_app(repogen_cache_dir, root / "repo", app=APP)
    venv = ensure_builder_venv(builder_python(), repogen_cache_dir, tuple(sorted(BUILDER_PACKAGES)))
    script = checkout_root() / "tests" / "apps" / "onnx" / "expected.py"
    subprocess.run([str(venv / "bin" / "python"), str(script), str(root / "expected.npz")], check=True)
    with np.load(root / "expected.npz", allow_pickle=True) as data:
        return root / "repo", {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def server(built, serve):
    return serve(built[0])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_version_answers_as_onnxruntime_does(built, server, protocol):
    repo, expected = built
    for model, version in SERVED:
        prefix = f"{model}.{version}."
        inputs = {k[len(prefix) + 3 :]: v for k, v in expected.items() if k.startswith(prefix + "in.")}
        answer = infer(protocol, server, model, inputs, model_version=str(version))
        wanted = {k[len(prefix) + 4 :]: v for k, v in expected.items() if k.startswith(prefix + "out.")}
        assert sorted(answer) == sorted(wanted), (model, version)
        for name, value in answer.items():
            if value.dtype == object:
                assert value.tolist() == wanted[name].tolist(), (model, version, name)
            else:
                assert value.dtype == wanted[name].dtype, (model, version, name)
                np.testing.assert_array_equal(value, wanted[name], err_msg=f"{model} v{version} {name}")
    np.testing.assert_array_equal(expected["External.1.out.y"], expected["Affine.1.out.y"])  # the weights shipped
    assert (repo / "External" / "1" / "affine.weights").is_file()
    one = expected["Affine.1.out.y"]
    two = expected["Affine.2.out.y"]
    assert not np.array_equal(one, two[: len(one)])  # the two versions are different graphs, each served


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_onnx_as_an_ensemble_step_and_through_bls(built, server, protocol):
    _, expected = built
    answer = infer(protocol, server, "Pipeline", {"raw": expected["Pipeline.in.raw"]})
    assert_floats_close(answer["total"], expected["Pipeline.out.total"], "Pipeline total")
    answer = infer(protocol, server, "Caller", {"x": expected["Caller.in.x"]})
    assert_floats_close(answer["y10"], expected["Caller.out.y10"], "Caller y10")
    assert_floats_close(answer["handmade"], expected["Caller.out.handmade"], "Caller handmade")
    x = np.array([1.0, -2.5], dtype=np.float32)
    np.testing.assert_array_equal(infer(protocol, server, "Handmade", {"x": x})["y"], 2 * x + 1)  # included as is


def test_a_fused_pipeline_runs_the_onnx_session_in_its_own_process(built, server):
    repo, expected = built
    for protocol in PROTOCOLS:
        answer = infer(protocol, server, "Fused", {"raw": expected["Pipeline.in.raw"]})
        assert_floats_close(answer["total"], expected["Pipeline.out.total"], "Pipeline total")
    graph = repo / "Fused" / "1" / "steps" / "Affine" / "2" / "model.onnx"  # the step's latest version
    assert graph.read_bytes() == (repo / "Affine" / "2" / "model.onnx").read_bytes()
    lock = {p["name"] for t in json.loads((repo / "Fused" / "1" / "model.json").read_text())["packages"].values()
            for p in t["lock"]}  # fmt: skip
    assert "onnxruntime" in lock


def _together(server, protocol, inputs):
    """Requests sent at once (one thread each); the model's executions they took, and each answer or error."""
    before = _counts(server, "Lookup")
    with concurrent.futures.ThreadPoolExecutor(len(inputs)) as pool:
        futures = [pool.submit(infer, protocol, server, "Lookup", i) for i in inputs]
        answers = [f.exception() or f.result() for f in futures]
    deadline = time.monotonic() + 30  # the server counts a request after its answer has left
    while (after := _counts(server, "Lookup"))[0] - before[0] < len(inputs):
        assert time.monotonic() < deadline, f"the server counted {after[0] - before[0]} of {len(inputs)} requests"
        time.sleep(0.1)
    return after[1] - before[1], answers  # executions: counted in full once every request is


def _counts(server, model):
    """(requests answered, successes and failures alike; executions) the server has counted for ``model``."""
    with server.client(timeout=60) as client:
        stats = client.get_inference_statistics(model)["model_stats"][0]
    done = sum(int(stats["inference_stats"].get(kind, {}).get("count", 0)) for kind in ("success", "fail"))
    return done, int(stats["execution_count"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_batch_runs_together_and_a_failing_request_fails_alone(built, server, protocol):
    _, expected = built
    index, rows = expected["Lookup.in.index"], expected["Lookup.out.rows"]
    executions, answers = _together(server, protocol, [{"index": index[i : i + 1]} for i in range(len(index))])
    assert executions == 1  # the batcher held them until 3 rows waited: one execute, one session.run
    for i, answer in enumerate(answers):
        assert not isinstance(answer, Exception), answer
        np.testing.assert_array_equal(answer["rows"], rows[i : i + 1])
    bad = np.array([[12, 0]], dtype=np.int64)  # index 12 of a 10-row table
    executions, answers = _together(server, protocol, [{"index": index[:1, :]}, {"index": bad}, {"index": index[2:]}])
    assert executions == 1
    np.testing.assert_array_equal(answers[0]["rows"], rows[:1])
    np.testing.assert_array_equal(answers[2]["rows"], rows[2:])
    assert isinstance(answers[1], InferenceServerException)
    assert "out of data bounds" in str(answers[1]) or "out of bounds" in str(answers[1]), str(answers[1])


def test_models_local_runs_the_onnx_models_in_process(built):
    _, expected = built
    assert_floats_close(expected["local.Affine.y"], expected["Caller.out.y10"] / 10, "local Affine y")
    for name in ("Pipeline", "Fused"):
        assert_floats_close(expected[f"local.{name}.total"], expected["Pipeline.out.total"], f"local {name}")
    np.testing.assert_array_equal(expected["local.Lookup.rows"], expected["Lookup.out.rows"])
    error = str(expected["local.Lookup.error"])
    assert error.startswith("ModelCallError: model 'Lookup' failed: ") and "out of" in error, error


def test_the_layout_is_triton_s_and_the_graph_is_in_the_manifest(built, server):
    repo, _ = built
    manifest = json.loads((repo / "repogen.manifest.json").read_text())
    for model, version in SERVED:
        graph = repo / model / str(version) / "model.onnx"
        assert graph.is_file()
        assert f"{model}/{version}/model.onnx" in manifest["files"]
        lock = {p["name"] for t in json.loads((graph.parent / "model.json").read_text())["packages"].values()
                for p in t["lock"]}  # fmt: skip
        assert "onnxruntime" in lock and "onnx" not in lock  # onnx made the graphs at build time only
    assert "max_batch_size: 8" in (repo / "Affine" / "config.pbtxt").read_text()
    handmade = checkout_root() / "tests" / "apps" / "onnx" / "handmade"
    for relative in ("config.pbtxt", "1/model.py"):  # included as it is, and hashed like every file
        assert (repo / "Handmade" / relative).read_bytes() == (handmade / relative).read_bytes()
        assert f"Handmade/{relative}" in manifest["files"]
    assert all(m.get("state") == "READY" for m in server.models_status())
    assert [p for p in validate_repository(repo) if not p.warning] == []


def test_serve_names_the_native_models_it_cannot_load_and_serves_the_rest(built, triton_install, tmp_path):
    repo, expected = built
    mixed = tmp_path / "mixed"
    shutil.copytree(repo, mixed, copy_function=os.link)  # the packages are hard links already
    shutil.copytree(NATIVE / "text_detection", mixed / "text_detection")
    served = ServeProcess(mixed, triton_install)
    try:
        served.wait_for(r"ready \(pid \d+\)")
        assert (
            f"Not serving 1 model(s): text_detection needs backend 'onnxruntime', and this tritonserver "
            f"({served.release}, embedded) has only the backends python. Serve them on a server with those backends "
            "(an NGC tritonserver container, or --tritonserver PATH), or build ONNX models with "
            'models.onnx(..., backend="python") to serve them here. Serving the other 10 under explicit model control.'
        ) in served.output()
        served.wait_for(r"not loaded \(--model picks\): text_detection")
        server = types.SimpleNamespace(http_url=f"127.0.0.1:{served.http}", grpc_url=f"127.0.0.1:{served.grpc}")
        for protocol in PROTOCOLS:
            answer = infer(protocol, server, "Mixed", {"a": expected["Mixed.1.in.a"], "b": expected["Mixed.1.in.b"],
                                                      "text": expected["Mixed.1.in.text"]})  # fmt: skip
            np.testing.assert_array_equal(answer["sum"], expected["Mixed.1.out.sum"])
    finally:
        assert served.stop() == 0

    only_native = ServeProcess(NATIVE, triton_install)
    try:
        assert only_native.wait_exit(120) == 1
    finally:
        only_native.stop()
    assert (
        f"Error: no model of {NATIVE} can be served here: text_detection, text_recognition need backend 'onnxruntime'"
    ) in only_native.output()


def test_the_server_parses_the_native_configs(triton_install, tmp_path):
    """The embedded server has no onnxruntime backend, but it parses a config (with its own r24.10 schema) before it
    looks for one: a native config it parses fails at the backend, one it cannot parse fails before (checked).
    It looks for the backend before it validates the fields (dims 0 fails there too): that part stays unchecked."""
    from tritonclient.utils import InferenceServerException

    repo = tmp_path / "native"
    shutil.copytree(NATIVE, repo)
    broken = repo / "broken"
    shutil.copytree(repo / "text_recognition", broken)
    config = (broken / "config.pbtxt").read_text().replace('"text_recognition"', '"broken"')
    (broken / "config.pbtxt").write_text(config + "model_metrics {\n}\n")  # a 24.11 field: 2.51 cannot parse it
    server = triton_install.server(repo, log_path=tmp_path / "tritonserver.log",
                                   extra_args=["--model-control-mode=explicit"])  # fmt: skip
    reasons = {}
    with server:
        server.wait_ready(120)
        with server.client(timeout=60) as client:
            for name in ("text_detection", "text_recognition", "broken"):
                with pytest.raises(InferenceServerException) as caught:
                    client.load_model(name)
                reasons[name] = str(caught.value)
    for name in ("text_detection", "text_recognition"):
        assert "unable to find backend library for backend 'onnxruntime'" in reasons[name], reasons[name]
    assert "unable to find backend library" not in reasons["broken"], reasons["broken"]
    assert "failed to poll from model repository" in reasons["broken"], reasons["broken"]
    log = (tmp_path / "tritonserver.log").read_text()
    assert f"Poll failed for model directory 'broken': failed to read text proto from {broken}" in log
    assert "Poll failed for model directory 'text_" not in log


def _with_parameters(repo, tmp_path, model, parameters):
    """A repository holding only ``model`` (hard links), its config given ``parameters``."""
    edited = tmp_path / "edited"
    shutil.copytree(repo / model, edited / model, copy_function=os.link)
    path = edited / model / "config.pbtxt"
    config = text_format.Parse(path.read_text(), mc.ModelConfig())
    for key, value in parameters.items():
        config.parameters[key].string_value = value
    path.unlink()  # a hard link: the built repository's copy stays as it was
    path.write_text(text_format.MessageToString(config))
    return edited


def test_the_spin_wait_is_read_from_the_config_and_a_bad_value_fails_the_load_naming_it(
    built, triton_install, tmp_path
):
    repo, expected = built
    spinning = _with_parameters(repo, tmp_path / "on", "Affine", {"session.intra_op.allow_spinning": "1"})
    server = triton_install.server(spinning, log_path=tmp_path / "on.log")
    try:
        server.start().wait_ready(120)
        inputs = {k[len("Affine.1.in.") :]: v for k, v in expected.items() if k.startswith("Affine.1.in.")}
        answer = infer("grpc", server, "Affine", inputs, model_version="1")
        np.testing.assert_array_equal(answer["y"], expected["Affine.1.out.y"])
    finally:
        server.stop()
    bad = _with_parameters(repo, tmp_path / "bad", "Affine", {"session.intra_op.allow_spinning": "maybe"})
    server = triton_install.server(bad, log_path=tmp_path / "bad.log")
    try:
        with pytest.raises(TritonServerError):
            server.start().wait_ready(120)
    finally:
        server.stop()
    assert (
        "model 'Affine': parameter session.intra_op.allow_spinning is 'maybe'; give 1 or 0 (true/false, on/off, yes/no)"
    ) in server.log_text()
