"""The specialized ``execute`` of an ONNX model on the Python backend (model_onnx.py.tmpl) answers exactly as the
runtime's general path (``OnnxSession`` behind the general ``TritonPythonModel``).

Both load on the backend shim with a stand-in session, ``y = x @ W`` in numpy that refuses negative
values as onnxruntime refuses an index out of bounds (onnxruntime itself runs in
tests/integration/test_onnx_models.py), and get the same requests: same answers, same error messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_onnx import FakeSession, W
from general_path import TritonPythonModel, initialize_args, load_module
from general_path import answer as _answer
from general_path import request as _request
from general_path import same as _same

from repogen import ModelConfig
from repogen.emit.onnx_model_source import onnx_model_py, runs_graph_inline
from repogen.ir.networks import network_model
from repogen.ir.spec import IOSpec, VersionSpec
from repogen.runtime.onnx_session import OnnxSession

X = IOSpec(name="x", data_type="TYPE_FP32", dims=(3,))
Y = IOSpec(name="y", data_type="TYPE_FP32", dims=(2,))
N = IOSpec(name="n", data_type="TYPE_INT64", dims=(-1,))


def _models(tmp_path, outputs=(Y,), batch=8):
    version = VersionSpec(version=1, infer_funcs=(OnnxSession,), files=(), imports=("onnxruntime",))
    spec = network_model("model 'M'", "M", ModelConfig(max_batch_size=batch), (X,), outputs, batch, (version,), True)
    source = onnx_model_py(spec, version)
    assert source is not None
    (tmp_path / "model.py").write_bytes(source)
    module = load_module(tmp_path / "model.py", "specialized_onnx_model_under_test")

    class Graph(OnnxSession):
        def __init__(self, context):  # what OnnxSession sets up, on the stand-in session
            self.session = FakeSession()
            self.run_options = None
            self.outputs = [t.name for t in outputs]
            self.batching = batch > 0
            self.strings = False

    built = []
    for cls in (module.TritonPythonModel, TritonPythonModel):
        model = cls()
        model.configure(initialize_args(spec, "M", tmp_path), [Graph], strict=False)
        built.append(model)
    return built


def _x(rows, value=1.0, columns=3):
    return np.full((rows, columns), value, np.float32)


def test_one_request_runs_straight_and_a_refused_one_gets_onnxruntime_s_error(tmp_path):
    specialized, _ = _models(tmp_path)
    specialized._execute = None  # the straight line takes nothing of the general path (a Request, OnnxSession's call)
    assert _answer(specialized.execute([_request(x=_x(2))])[0]) == {"y": ("<f4", (_x(2) @ W).tolist())}
    assert specialized.infer_func.session.runs == [(2, 3)]
    specialized, general = _models(tmp_path)
    assert _same([specialized, general], _request(x=_x(1, -1))) == [
        "RuntimeError: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : negative index"
    ]


def test_several_requests_are_one_run_and_each_gets_its_rows(tmp_path):
    specialized, general = _models(tmp_path)
    answers = _same([specialized, general], _request(x=_x(1, 1)), _request(x=_x(3, 2)), _request(x=_x(2, 3)))
    assert specialized.infer_func.session.runs == [(6, 3)]
    assert answers[1] == {"y": ("<f4", (_x(3, 2) @ W).tolist())}


@pytest.mark.parametrize(
    "rows",
    [
        [_x(1), _x(1, -1), _x(2)],  # onnxruntime refuses the batch: each runs alone, one fails
        [_x(1), _x(2, columns=2), _x(2)],  # other widths: a run per width
        [_x(1), np.ones(3, np.float32)],  # an empty batch as 2.39 hands it over: the batch axis stripped
    ],
    ids=["refused", "widths", "empty"],
)
def test_a_batch_the_straight_line_does_not_cover_answers_as_the_general_path(tmp_path, rows):
    specialized, general = _models(tmp_path)
    _same([specialized, general], *[_request(x=x) for x in rows])
    runs = general.infer_func.session.runs  # the straight line's run, if any, then the general path's
    assert specialized.infer_func.session.runs[-len(runs) :] == runs


def test_an_output_without_the_batch_axis_answers_as_the_general_path(tmp_path):
    models = _models(tmp_path, outputs=(Y, N))
    assert [a["n"] for a in _same(models, _request(x=_x(1)), _request(x=_x(2)))] == [("<i8", 1), ("<i8", 2)]
    assert _same(models, _request(x=_x(3)))[0]["n"] == ("<i8", 3)


def test_a_model_without_batching_runs_each_request_as_it_came(tmp_path):
    models = _models(tmp_path, batch=0)
    assert "_execute_many" not in (tmp_path / "model.py").read_text()
    _same(models, _request(x=np.ones(3, np.float32)))
    _same(models, _request(x=np.ones(3, np.float32)), _request(x=np.full(3, -1, np.float32)))


def test_bytes_and_what_is_not_an_onnx_session_keep_the_general_template():
    version = VersionSpec(version=1, infer_funcs=(OnnxSession,), files=(), imports=("onnxruntime",))
    text = IOSpec(name="text", data_type="TYPE_STRING", dims=(1,))
    spec = network_model("model 'M'", "M", ModelConfig(max_batch_size=8), (X, text), (Y,), 8, (version,), True)
    assert not runs_graph_inline(spec, version) and onnx_model_py(spec, version) is None
    plain = VersionSpec(version=1, infer_funcs=(lambda requests: requests,))
    spec = network_model("model 'M'", "M", ModelConfig(max_batch_size=8), (X,), (Y,), 8, (plain,), True)
    assert onnx_model_py(spec, plain) is None


def test_a_request_cancelled_while_queued_is_answered_cancelled_and_left_out_of_the_run(tmp_path):
    models = _models(tmp_path)
    requests = [_request(x=_x(1, v)) for v in (1, 2, 3)]
    requests[1].cancelled = True
    answers = _same(models, *requests)  # freshly loaded: nothing says how long the requests waited, so they are asked
    assert answers[1] == "request cancelled before model 'M' ran it"
    assert answers[2] == {"y": ("<f4", (_x(1, 3) @ W).tolist())}
    assert [model.infer_func.session.runs for model in models] == [[(2, 3)], [(2, 3)]]  # the two live rows, once
