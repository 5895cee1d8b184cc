"""The runtime's Request without a server: the fallbacks an older or stripped-down backend takes."""

from __future__ import annotations

import pytest

from repogen.runtime.errors import InferenceError
from repogen.runtime.request import EmptyBatchError, Request, batched_input_ranks


class _BackendRequest:
    """A pb_utils.InferenceRequest as a Python backend without ``parameters()`` exposes it."""


class _NewerBackendRequest:
    def parameters(self) -> str:
        return '{"steps": 3}'


def test_parameters_on_a_backend_without_them_is_a_clear_inference_error():
    request = Request({}, source=_BackendRequest())
    with pytest.raises(InferenceError, match=r"no InferenceRequest.parameters\(\); serve with tritonserver 2.39"):
        _ = request.parameters


def test_parameters_are_parsed_only_when_read():
    assert Request({}, source=_NewerBackendRequest()).parameters == {"steps": 3}
    assert Request({}).parameters == {}


def test_batched_input_ranks_count_the_batch_dimension_and_follow_reshape():
    config = {
        "input": [
            {"name": "x", "dims": [2]},
            {"name": "flat", "dims": [1], "reshape": {}},
            {"name": "image", "dims": [12], "reshape": {"shape": [3, 4]}},
        ]
    }
    assert batched_input_ranks(config) == {"x": 2, "flat": 1, "image": 3}


def test_empty_batch_error_names_model_and_input():
    error = EmptyBatchError("Batched", "x")
    assert isinstance(error, InferenceError)
    assert str(error) == (
        "model 'Batched' input 'x': the request has an empty batch (batch size 0); send at least one row"
    )
