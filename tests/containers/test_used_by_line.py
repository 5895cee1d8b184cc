"""The used-by line, run for real on a stand-in of NGC's image.

``docker run --shm-size=... -v <repo>:/models:ro -p 127.0.0.1:P:8000 IMAGE tritonserver
--model-repository=/models`` serves, unchanged, the pipeline example (ensemble, BLS, async BLS, a
decoupled model streamed through BLS), the app shipping scikit-learn, onnxruntime and PyYAML, and
exported ONNX networks on the Python backend; every answer over HTTP and gRPC equals the in-process
or the builder's own. Then the container's user: NGC's images and KServe's runtime serve as uid 1000,
so repositories built under ``umask 077`` by root are served with ``--user 1000:1000`` (the 3.12
stand-in serves the packages app's cp312 trees that way); a repository others cannot read is the
control, and fails to load as it did before the build wrote modes.
"""

from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import pytest
from runs import PACKAGES_INPUTS, assert_same, run_triton

from repogen.errors import DockerError
from repogen.loader import load_app
from repogen.testing.answers import assert_floats_close
from repogen.testing.client import PROTOCOLS, infer, stream

TEXTS = np.array([[b"a good day"], [b"this is really an awful movie"], [b"meh"], [b"great"]], dtype=object)
ONNX_SERVED = (("Affine", 1), ("Affine", 2), ("Mixed", 1))


@pytest.fixture(scope="module")
def pipeline(standin_image, docker_engine, built):
    repository = built("examples/pipeline/app.py:models")
    with run_triton(docker_engine, standin_image("24.10").tag, repository, prefix="used-by-pipeline") as served:
        yield served.wait_ready(240)


@pytest.fixture(scope="module")
def packages(standin_image, docker_engine, packages_app):
    with run_triton(docker_engine, standin_image("24.10").tag, packages_app(), prefix="used-by-packages") as s:
        yield s.wait_ready(300)


@pytest.fixture(scope="module")
def onnx(standin_image, docker_engine, onnx_app):
    with run_triton(docker_engine, standin_image("24.10").tag, onnx_app[0], prefix="used-by-onnx") as served:
        yield served.wait_ready(300)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_pipeline_example_answers_as_it_does_in_process(pipeline, protocol):
    local = load_app("examples/pipeline/app.py:models").repository.local()
    for model in ("Pipeline", "RoutedPipeline", "BothClassifiers"):  # an ensemble, BLS, async BLS
        assert_same(infer(protocol, pipeline, model, {"text": TEXTS}), local.infer(model, {"text": TEXTS}), model)
    text = {"text": np.array([b"one two three"], dtype=object)}
    streamed = stream(pipeline, "Ticker", text)  # decoupled, re-streaming a decoupled model through BLS
    expected = list(local.stream("Ticker", text))
    assert [r["word"].tolist() for r in streamed] == [r["word"].tolist() for r in expected] and len(expected) == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_app_shipping_scikit_learn_onnxruntime_and_pyyaml_answers_as_its_builder(
    packages, packages_expected, protocol
):
    for model, inputs in PACKAGES_INPUTS.items():
        answer = infer(protocol, packages, model, inputs)
        assert_same(answer, {n: packages_expected[f"{model}.{n}"] for n in answer}, model)
    versions = infer(protocol, packages, "Onnx", PACKAGES_INPUTS["Onnx"])["version"]
    assert versions[0, 0].decode() == str(packages_expected["versions.onnxruntime"])  # the shipped onnxruntime


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_onnx_networks_on_the_python_backend_answer_as_onnxruntime(onnx, onnx_app, protocol):
    expected = onnx_app[1]
    for model, version in ONNX_SERVED:
        prefix = f"{model}.{version}."
        inputs = {k[len(prefix) + 3 :]: v for k, v in expected.items() if k.startswith(prefix + "in.")}
        wanted = {k[len(prefix) + 4 :]: v for k, v in expected.items() if k.startswith(prefix + "out.")}
        assert_same(infer(protocol, onnx, model, inputs, model_version=str(version)), wanted, f"{model} v{version}")
    answer = infer(protocol, onnx, "Caller", {"x": expected["Caller.in.x"]})  # BLS into an ONNX model
    assert_floats_close(answer["y10"], expected["Caller.out.y10"], f"Caller y10 over {protocol}")


def _assert_roots_and_readable(repository):
    for path in [repository, *repository.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert path.lstat().st_uid == 0 and mode & 0o004, f"{path}: {oct(mode)}"  # root's, readable by others


def test_a_repository_built_under_umask_077_serves_as_uid_1000(standin_image, docker_engine, built):
    repository = built("examples/quickstart/app.py:models", umask=0o077)
    _assert_roots_and_readable(repository)
    image = standin_image("24.10").tag
    with run_triton(docker_engine, image, repository, prefix="used-by-uid", user="1000:1000") as served:
        served.wait_ready(180)
        assert served.exec("id", "-u").stdout.strip() == "1000"
        for protocol in PROTOCOLS:
            a = np.array([[1.0, 2.0]], dtype=np.float32)
            assert infer(protocol, served, "AddSub", {"a": a, "b": a})["add"].tolist() == [[2.0, 4.0]]


def test_packages_built_under_umask_077_serve_as_uid_1000_on_python_312(
    standin_image, docker_engine, packages_app, packages_expected
):
    repository = packages_app(0o077)
    image = standin_image("24.10-py3.12").tag
    with run_triton(docker_engine, image, repository, prefix="used-by-uid312", user="1000:1000") as served:
        served.wait_ready(300)
        for protocol in PROTOCOLS:
            for model, inputs in PACKAGES_INPUTS.items():
                answer = infer(protocol, served, model, inputs)
                assert_same(answer, {n: packages_expected[f"{model}.{n}"] for n in answer}, model)


def test_the_control_a_repository_others_cannot_read_loads_nothing_as_uid_1000(
    standin_image, docker_engine, built, tmp_path
):
    """What a build under umask 077 gave before the writer set modes: NGC's uid 1000 cannot open it."""
    private = tmp_path / "private"
    shutil.copytree(built("examples/quickstart/app.py:models"), private)
    for path in [private, *private.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    image = standin_image("24.10").tag
    with run_triton(docker_engine, image, private, prefix="used-by-private", user="1000:1000") as served:
        with pytest.raises(DockerError, match="exited"):
            served.wait_ready(120)
        assert "failed to open directory" in served.logs() or "Permission denied" in served.logs()
