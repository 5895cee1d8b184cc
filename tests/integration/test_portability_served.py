"""One build serves on the Python of every NGC container, whatever Python built it.

Each builder (Python 3.10, this venv's 3.11, 3.13) builds four apps: the quickstart, the pipeline
example (ensemble, BLS, streaming), the features app (class models with shipped files, sequence
batching, decoupled, instance groups) and an app of lambdas, closures, nested functions,
classes, dataclasses, generators, async code and a notebook-style cell. One server of the pairing
under test (``make test`` runs this module on 2.39/2.41/2.51 + Python 3.10 and 2.51 + 3.12) serves
all four repositories of one builder; every model answers over HTTP and gRPC.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from pipeline_reference import reference

from repogen.ondisk.reader import files
from repogen.testing.answers import assert_answers_match
from repogen.testing.bytecode_scan import bytecode_in_repository
from repogen.testing.client import PROTOCOLS, infer, stream

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

THIS_PYTHON = "{}.{}".format(*sys.version_info[:2])
BUILDERS = ("3.10", THIS_PYTHON, "3.13")
APPS = {
    "quickstart": "examples/quickstart/app.py:models",
    "pipeline": "examples/pipeline/app.py:models",
    "features": "tests/apps/parity/app.py:models",
    "portable": "tests/apps/portable/app.py:models",
}
SERVER_ARGS = ("--cache-config=local,size=1048576", "--rate-limit=execution_count", "--exit-timeout-secs=5")
X = np.array([1.0, 2.0], dtype=np.float32)
TEXTS = np.array([[b"a good day"], [b"this is really an awful movie"], [b"meh"], [b"great"]], dtype=object)


@pytest.fixture(scope="module", params=BUILDERS, ids=[f"built-by-{v}" for v in BUILDERS])
def built(request, builder, cli_build, tmp_path_factory):
    """The four repositories, as ``repogen build`` under one Python writes them."""
    python = request.param
    root = tmp_path_factory.mktemp(f"built-by-{python}")
    for name, app in APPS.items():
        if python == THIS_PYTHON:
            cli_build(app, root / name)
        else:
            builder(python, app, root / name)
    return python, root


@pytest.fixture(scope="module")
def server(built, serve):
    _, root = built
    repositories = [f"--model-repository={root / name}" for name in list(APPS)[1:]]
    return serve(root / "quickstart", extra_args=(*repositories, *SERVER_ARGS))


def test_every_model_loads(server, built):
    states = {(m["name"], m.get("version")): m.get("state") for m in server.models_status()}
    assert len(states) >= 31
    assert {k: v for k, v in states.items() if v != "READY"} == {}


def test_payloads_hold_no_bytecode(built):
    _, root = built
    for name in APPS:
        assert bytecode_in_repository(root / name) == {}


def test_a_rebuild_is_byte_identical(built, builder, cli_build, tmp_path):
    python, root = built
    again = tmp_path / "portable"
    (cli_build if python == THIS_PYTHON else lambda *a: builder(python, *a))(APPS["portable"], again)

    first, second = files(root / "portable"), files(again)  # without the __pycache__ a server writes
    assert first.keys() == second.keys()
    assert [p for p in first if first[p].read_bytes() != second[p].read_bytes()] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_quickstart(server, protocol):
    out = infer(protocol, server, "AddSub", {"a": np.array([[1.0, 2.0]], np.float32), "b": X[None]})
    assert out["add"].tolist() == [[2.0, 4.0]] and out["sub"].tolist() == [[0.0, 0.0]]
    out = infer(protocol, server, "Shout", {"text": np.array([[b"hi\x00"]], dtype=object)})
    assert out["loud"].tolist() == [[b"HI\x00!"]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["Pipeline", "RoutedPipeline", "BothClassifiers"])
def test_pipeline_answers_as_the_numpy_reference(server, protocol, model):
    expected = reference(model, TEXTS)
    served = infer(protocol, server, model, {"text": TEXTS})
    assert_answers_match(served, expected, f"{model} over {protocol}")


def test_pipeline_streams(server):
    chunks = stream(server, "Ticker", {"text": np.array([b"one two"], dtype=object)})
    assert [(c["word"][0], int(c["seen"][0])) for c in chunks] == [(b"ONE", 1), (b"TWO", 2)]
    assert infer("http", server, "WordCount", {"text": np.array([b"a b c"], dtype=object)})["words"].tolist() == [3]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_class_model_with_shipped_files(server, protocol):
    out = infer(protocol, server, "Linear", {"x": np.array([[1, 1, 1, 0], [0, 0, 0, 2]], dtype=np.float32)})
    assert out["scores"].tolist() == [[1, 2, 3], [2, 2, 2]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sequence_batching(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)

    def send(sequence: int, value: float, **flags: bool) -> float:
        tensor = module.InferInput("x", [1, 1], "FP32")
        tensor.set_data_from_numpy(np.array([[value]], dtype=np.float32))
        result = client.infer("Accumulator", [tensor], sequence_id=sequence, **flags)
        return float(result.as_numpy("total")[0, 0])

    base = 100 if protocol == "http" else 200
    try:
        assert send(base + 1, 1.0, sequence_start=True) == 1.0
        assert send(base + 2, 10.0, sequence_start=True) == 10.0
        assert send(base + 1, 2.0, sequence_end=True) == 3.0
        assert send(base + 2, 20.0, sequence_end=True) == 30.0
    finally:
        client.close()


def test_decoupled_and_instance_groups(server):
    assert [int(c["tick"][0]) for c in stream(server, "Countdown", {"n": np.array([3], np.int32)})] == [3, 2, 1]
    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(lambda _: infer("http", server, "Twins", {"x": X[:1]}), range(6)))
    assert {int(o["instance"][0]) for o in outs} == {0, 1}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_lambdas_closures_classes_decorators_async_and_cells(server, protocol):
    assert infer(protocol, server, "Lambdas", {"x": X})["y"].tolist() == [104.0, 106.0]
    out = infer(protocol, server, "Closures", {"x": X})
    assert out["y"].tolist() == [72.0, 82.0] and int(out["calls"][0]) >= 1  # late-bound i == 2 in all three
    out = infer(protocol, server, "Classes", {"x": X[None]})
    assert out["y"].tolist() == [[22.5, 37.5]] and out["tags"].tolist() == [[2]]
    out = infer(protocol, server, "Decorated", {"x": X})
    assert out["y"].tolist() == [1.0, 2.0] and out["corner"].tolist() == [6.0]
    assert infer(protocol, server, "Async", {"x": X})["y"].tolist() == [2.0, 4.0]
    assert infer(protocol, server, "Notebook", {"x": X})["y"].tolist() == [9.0, 11.0]


def test_nonlocal_state_lives_in_the_instance(server):
    first = int(infer("http", server, "Closures", {"x": X})["calls"][0])
    assert int(infer("grpc", server, "Closures", {"x": X})["calls"][0]) == first + 1


def test_generators_and_async_generators_stream(server):
    assert [c["y"].tolist() for c in stream(server, "Stream", {"x": X})] == [[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]
    assert [c["y"].tolist() for c in stream(server, "AsyncStream", {"x": X})] == [[1.0, 2.0], [0.0, 1.0]]
