"""One rule for "this output goes out as it is": ``OutputPlan.accepts``. The inline check that
emit/model_source.py writes into a specialized ``execute`` must decide exactly as it does, for every
kind of value, strict or not, fixed or variable dims; fused steps call it directly. An output the check
hands straight to ``pb_utils.Tensor`` (``sent``) may be non-contiguous, as that makes it contiguous itself:
there the check decides as ``accepts`` does for the contiguous copy the stub sends."""

from __future__ import annotations

import textwrap
import time

import numpy as np
import pytest

from repogen.emit.model_source import INDENT, OutputCode
from repogen.ir.spec import IOSpec
from repogen.local import backend_shim
from repogen.runtime.conversion import OutputPlan

TENSORS = [
    IOSpec("y", "TYPE_FP32", (3,)),
    IOSpec("y", "TYPE_FP32", (-1,)),
    IOSpec("y", "TYPE_INT64", (2, -1)),
]
VALUES = [
    np.zeros((2, 3), np.float32),
    np.zeros((2, 4), np.float32),
    np.zeros((3, 3), np.float32),
    np.zeros((2, 3), np.float64),
    np.zeros((2, 3, 1), np.float32),
    np.zeros((2,), np.float32),
    np.float32(1.0),
    np.zeros((), np.float32),
    np.zeros((3, 2), np.float32).T,
    np.zeros((2, 2, 5), np.int64),
    np.zeros((2, 3, 5), np.int64),
    np.zeros((2, 2, 5), np.int64)[:, :, ::2],
    [[1.0, 2.0, 3.0]] * 2,
    None,
]


def _inline(code: OutputCode, sent: bool):
    """The generated check as a function: True where it lets the value through."""
    body = textwrap.dedent(code.check("False", source="outputs", sent=sent))
    source = "def check(outputs, rows):\n" + textwrap.indent(body, "    ") + "\n    return True\n"
    scope = {"_ndarray": np.ndarray, "np": np}
    exec(compile(f"{code.dtype_constant()}\n{source}", "<inline>", "exec"), scope)  # noqa: S102
    return scope["check"]


@pytest.mark.parametrize("sent", [True, False], ids=["sent", "next step's"])
@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("tensor", TENSORS, ids=lambda t: f"{t.data_type}{list(t.dims)}")
def test_the_inline_check_is_accepts(tensor, strict, sent):
    code = OutputCode(0, tensor, strict)
    inline = _inline(code, sent)
    plan = OutputPlan("M", "y", tensor.data_type, list(tensor.dims), True, strict)
    for value in VALUES:
        as_sent = np.ascontiguousarray(value) if sent and type(value) is np.ndarray else value
        for rows in (2, 3):
            assert inline({"y": value}, rows) is plan.accepts(as_sent, rows), (value, rows)
    assert INDENT  # the generated code is indented for execute's body; dedented above


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("tensor", TENSORS, ids=lambda t: f"{t.data_type}{list(t.dims)}")
def test_a_streams_steps_take_the_fast_lane_as_accepts_says(tensor, strict):
    """decoupled._stream_one writes ``accepts`` out for plans with no shape to check: the same values pass."""
    backend_shim.install()
    from repogen.runtime import decoupled

    plan = OutputPlan("M", "y", tensor.data_type, list(tensor.dims), False, strict)

    class Model:
        output_plans = [plan]
        stream_lane = decoupled.lane([plan])

        @staticmethod
        def responses(results, requests=None):
            return [("model.response", result) for result in results]

    class Sender:
        sent: list = []

        def send(self, response=None, flags=0):
            self.sent.append(response)

    sender = Sender()
    steps = ([{"y": value}] for value in VALUES)  # a plain generator, as the stream's own loop takes
    decoupled._stream_one(Model, steps, sender, lambda: True, time.perf_counter())
    fast = [not isinstance(sent, tuple) for sent in sender.sent]
    assert fast == [plan.accepts(value) for value in VALUES]
    for value, sent in zip(VALUES, sender.sent, strict=True):
        if not isinstance(sent, tuple):
            assert sent.output_tensors()[0].as_numpy() is value


def test_a_strict_output_checks_each_new_shape_and_remembers_only_those_that_passed():
    """``OutputPlan.shapes_seen`` spares a stream's tokens and a batcher's sizes the check after their first: a
    shape that failed stays unremembered and fails every time, the message naming it."""
    from repogen.runtime.errors import InferenceError

    plan = OutputPlan("M", "y", "TYPE_FP32", [2, -1], True, True)
    assert plan.convert(np.zeros((3, 2, 5), np.float32)).shape == (3, 2, 5)
    for _ in range(2):
        with pytest.raises(InferenceError, match=r"output 'y': expected shape \[batch, 2, -1\], found \[3, 4, 5\]"):
            plan.convert(np.zeros((3, 4, 5), np.float32))
    assert plan.shapes_seen == {(3, 2, 5)}
