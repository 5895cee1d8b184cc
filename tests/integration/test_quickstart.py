"""End to end: `repogen build` the quickstart, serve it with stock tritonserver from a
numpy-only venv, and check every model's answers over HTTP and gRPC."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer, make_client

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("quickstart") / "repo"
    result = cli_build("examples/quickstart/app.py:models", repo)
    assert "Built 2 model(s)" in result.stdout
    return serve(repo)


def test_every_model_is_ready(server):
    status = {m["name"]: m.get("state") for m in server.models_status()}
    assert status == {"AddSub": "READY", "Shout": "READY"}


def test_server_python_has_numpy_only(server, triton_install):
    venv = triton_install.venv
    assert venv.numpy == "1.26.4"
    site = list(venv.path.glob("lib/python*/site-packages"))[0]
    installed = sorted(p.name.split("-")[0].lower() for p in site.glob("*.dist-info"))
    assert [name for name in installed if name not in ("pip", "setuptools")] == ["numpy"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("batch_size", [1, 64])
def test_add_sub(server, protocol, batch_size):
    rng = np.random.default_rng(batch_size)
    a = rng.standard_normal((batch_size, 5)).astype(np.float32)
    b = rng.standard_normal((batch_size, 5)).astype(np.float32)
    out = infer(protocol, server, "AddSub", {"a": a, "b": b})
    assert out["add"].dtype == np.float32
    np.testing.assert_array_equal(out["add"], a + b)
    np.testing.assert_array_equal(out["sub"], a - b)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("batch_size", [1, 16])
def test_shout_bytes(server, protocol, batch_size):
    words = [b"hi", b"ab\x00\x00", b"\x00x", "héllo".encode()] * 4
    text = np.array([[w] for w in words[:batch_size]], dtype=object)
    out = infer(protocol, server, "Shout", {"text": text})
    assert out["loud"].tolist() == [[w.upper() + b"!"] for w in words[:batch_size]]
    # Trailing NULs reach the callable intact: b"ab\x00\x00" is 4 bytes long.
    assert out["length"].tolist() == [[len(w)] for w in words[:batch_size]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_requests_over_max_batch_size_are_rejected_by_triton(server, protocol):
    a = np.zeros((65, 2), dtype=np.float32)
    with pytest.raises(Exception, match="batch"):
        infer(protocol, server, "AddSub", {"a": a, "b": a})
    assert infer(protocol, server, "AddSub", {"a": a[:1], "b": a[:1]})["add"].shape == (1, 2)


def test_config_served_is_the_one_built(server):
    client = make_client("grpc", server)
    try:
        config = client.get_model_config("AddSub", as_json=True)["config"]
    finally:
        client.close()
    assert config["max_batch_size"] == 64
    assert config["backend"] == "python"
    assert [i["name"] for i in config["input"]] == ["a", "b"]
    assert config["dynamic_batching"]["max_queue_delay_microseconds"] == "100"


def test_concurrent_requests_each_get_their_own_rows(server):
    """The dynamic batcher merges these into one call (model.py's _execute_many); no row may cross over."""
    import concurrent.futures

    rng = np.random.default_rng(7)
    cases = [
        {
            "a": rng.standard_normal((1 + i % 4, 5)).astype(np.float32),
            "b": rng.standard_normal((1 + i % 4, 5)).astype(np.float32),
        }
        for i in range(48)
    ]
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda inputs: infer("grpc", server, "AddSub", inputs), cases))
    for inputs, out in zip(cases, answers, strict=True):
        np.testing.assert_array_equal(out["add"], inputs["a"] + inputs["b"])
        np.testing.assert_array_equal(out["sub"], inputs["a"] - inputs["b"])
    stats = make_client("http", server).get_inference_statistics("AddSub")["model_stats"][0]
    requests = int(stats["inference_stats"]["success"]["count"])
    assert int(stats["execution_count"]) < requests, stats  # some requests did share a call
