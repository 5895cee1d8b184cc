"""@batch gathers requests into one call and splits the outputs back, as PyTriton's does."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import InferenceError, Request, batch


def _requests(*sizes):
    return [Request({"x": np.full((n, 2), i, dtype=np.float32)}) for i, n in enumerate(sizes)]


def test_batch_concatenates_and_splits():
    calls = []

    @batch
    def double(x):
        calls.append(x.shape)
        return {"y": x * 2}

    results = double(_requests(1, 3, 2))
    assert calls == [(6, 2)]
    assert [r["y"].shape for r in results] == [(1, 2), (3, 2), (2, 2)]
    assert results[1]["y"][0, 0] == 2.0 and results[2]["y"][0, 0] == 4.0


def test_batch_single_request_passes_arrays_without_copy():
    seen = {}

    @batch
    def keep(x):
        seen["x"] = x
        return {"y": x}

    request = _requests(4)[0]
    (result,) = keep([request])
    assert seen["x"] is request["x"] and result["y"] is request["x"]


def test_batch_sequence_outputs_and_methods():
    class Model:
        factor = 3

        @batch
        def infer(self, x):
            return (x * self.factor, x + 1)

    results = Model().infer(_requests(1, 1))
    assert isinstance(results[1], tuple)
    assert results[1][0][0, 0] == 3.0 and results[1][1][0, 0] == 2.0


def test_batch_rejects_mixed_inputs_and_bad_returns():
    @batch
    def f(**inputs):
        return 42

    mixed = [Request({"x": np.zeros((1, 1))}), Request({"z": np.zeros((1, 1))})]
    with pytest.raises(InferenceError, match="different inputs"):
        f(mixed)
    with pytest.raises(InferenceError, match="must return a dict of output arrays"):
        f(_requests(1, 1))


def test_request_is_a_mapping_with_parameters():
    request = Request({"a": np.ones(1)}, parameters={"p": 1})
    assert dict(**request).keys() == {"a"} and request.parameters == {"p": 1} and request.data is request
