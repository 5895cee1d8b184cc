"""``Request.handed_on_cpu``: where python_backend handed an input, read from its own tensor, not from ours."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.runtime.errors import InferenceError
from repogen.runtime.request import Request


class _Handed:
    """A python_backend tensor as the stub hands it: a name and ``is_cpu()``."""

    def __init__(self, name: str, on_cpu: bool):
        self._name, self._on_cpu = name, on_cpu

    def name(self) -> str:
        return self._name

    def is_cpu(self) -> bool:
        return self._on_cpu


class _ServerRequest:
    def __init__(self, *tensors: _Handed):
        self._tensors = list(tensors)

    def inputs(self) -> list[_Handed]:
        return self._tensors


def test_each_input_says_where_the_backend_handed_it():
    source = _ServerRequest(_Handed("x", on_cpu=False), _Handed("k", on_cpu=True))
    request = Request({"x": np.zeros(1), "k": np.zeros(1)}, source=source)
    assert (request.handed_on_cpu("x"), request.handed_on_cpu("k")) == (False, True)


@pytest.mark.parametrize(
    "request_",
    [Request({"x": np.zeros(1)}), Request({"x": np.zeros(1)}, source=_ServerRequest(_Handed("x", True)), handed=False)],
    ids=["made-here", "fused-step"],
)
def test_an_input_no_backend_handed_is_refused_saying_why(request_):
    with pytest.raises(InferenceError, match=r"input 'x' was not handed to this request by python_backend \(a fused"):
        request_.handed_on_cpu("x")


def test_an_input_the_request_lacks_is_refused():
    with pytest.raises(InferenceError, match="input 'y' was not handed"):
        Request({}, source=_ServerRequest(_Handed("x", True))).handed_on_cpu("y")
