"""The outputs a client asked for (repogen/runtime/requested.py), in process: the callable is told which
(``Request.requested_output_names``, PyTriton 0.5.12's name), may return only those, and an output nobody asked for
is never converted. tests/integration/test_requested_outputs_served.py proves it on the server over HTTP and gRPC."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import ModelCallError, ModelConfig, Repository, Tensor, batch
from repogen.local import backend_shim
from repogen.runtime.request import Request

pb = backend_shim.install()

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
OUTPUTS = [Tensor(name="double", dtype=np.float32, shape=(1,)), Tensor(name="square", dtype=np.float32, shape=(1,))]
ONE = ModelConfig(batching=False)


class Converted:
    count = 0

    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        Converted.count += 1
        return np.asarray(self.value, dtype=dtype)


def _local(callable_, strict=False):
    repo = Repository()
    repo.bind("M", callable_, inputs=X, outputs=OUTPUTS, config=ONE, strict=strict)
    return repo.local()


def test_the_callable_is_told_and_what_nobody_asked_for_is_never_converted():
    told = []

    def infer(requests):
        told.extend(r.requested_output_names for r in requests)
        return [{"double": r["x"] * 2, "square": Converted(r["x"] ** 2)} for r in requests]

    local = _local(infer)
    x = {"x": np.array([3], np.float32)}
    before = Converted.count
    assert local.infer("M", x, outputs=["double"]) == {"double": np.array([6], np.float32)}
    assert Converted.count == before
    assert local.infer("M", x)["square"].tolist() == [9.0]
    assert Converted.count == before + 1
    assert told == [["double"], ["double", "square"]]


@pytest.mark.parametrize("strict", [True, False])
def test_a_callable_may_leave_out_what_nobody_asked_for_but_not_what_was_asked(strict):
    def infer(requests):
        return [{name: r["x"] for name in r.requested_output_names if name != "square"} for r in requests]

    local = _local(infer, strict)
    assert list(local.infer("M", {"x": np.ones(1, np.float32)}, outputs=["double"])) == ["double"]
    with pytest.raises(ModelCallError, match="did not return output 'square'"):
        local.infer("M", {"x": np.ones(1, np.float32)}, outputs=["square"])


def test_a_result_in_the_declared_order_is_trimmed_too_and_undeclared_names_still_fail_strict():
    local = _local(lambda requests: [(r["x"] * 2, Converted(r["x"])) for r in requests])
    before = Converted.count
    assert local.infer("M", {"x": np.ones(1, np.float32)}, outputs=["double"])["double"].tolist() == [2.0]
    assert Converted.count == before
    strict = _local(lambda requests: [{"double": r["x"], "extra": r["x"]} for r in requests], strict=True)
    with pytest.raises(ModelCallError, match=r"undeclared outputs \['extra'\]"):
        strict.infer("M", {"x": np.ones(1, np.float32)}, outputs=["double"])


def test_the_batch_template_s_general_path_trims_per_request():
    """A @batch model's specialized execute hands its requests to finish_batch: each request's own outputs."""
    repo = Repository()
    repo.bind("M", batch(lambda x: {"double": x * 2, "square": (x**2).astype(np.float64)}), inputs=X, outputs=OUTPUTS,
              config=ModelConfig(max_batch_size=4))  # fmt: skip
    local = repo.local()
    model = local._instance(local.spec.model("M"))
    requests = [
        pb.InferenceRequest([pb.Tensor("x", np.array([[2]], np.float32))], requested=["double"]),
        pb.InferenceRequest([pb.Tensor("x", np.array([[3]], np.float32))], requested=["double", "square"]),
    ]
    outputs = {"double": np.array([[4], [6]], np.float32), "square": np.array([[4], [9]], np.float64)}
    answers = model.finish_batch(outputs, [1, 1], requests)
    assert [{t.name(): t.as_numpy().tolist() for t in a.output_tensors()} for a in answers] == [
        {"double": [[4.0]]},
        {"double": [[6.0]], "square": [[9.0]]},
    ]


def test_a_request_made_outside_the_server_says_none():
    assert Request({"x": np.ones(1)}).requested_output_names is None
