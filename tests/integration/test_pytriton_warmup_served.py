"""PyTriton 0.7's ``model_warmup`` on the real server: the requests its ``ModelWarmup`` declares (random FP32 rows,
an empty BYTES input, a batch of 2, twice) reach the callable before the model is READY, and the first client request
is the third call (tests/apps/pytriton_warmup)."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import infer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("pytriton-warmup") / "repo"
    cli_build("tests/apps/pytriton_warmup/app.py:triton", repo)
    return serve(repo)


def test_the_declared_warmup_runs_before_ready(server):
    inputs = {"INPUT_1": np.ones((1, 3), np.float32), "INPUT_2": np.array([[b"x"]], dtype=object)}
    for protocol, calls in (("grpc", 3), ("http", 4)):  # two warm-up requests first, then ours, one at a time
        answer = infer(protocol, server, "Warmed", inputs)
        assert int(answer["calls"][0, 0]) == calls, protocol
        assert int(answer["warm_rows"][0, 0]) == 2  # the warm-up's batch_size
        assert bool(answer["warm_random"][0, 0]) and bool(answer["warm_zero"][0, 0])  # random FP32, empty BYTES
