"""The specialized ``execute`` (model_batch.py.tmpl) answers exactly as the runtime's general path.

Each case builds a model, loads its generated ``model.py`` beside the general ``TritonPythonModel``
(both on the backend shim) and sends the same requests to both: the answers, and the error
messages, must be the same, whichever path the specialized one took.
"""

from __future__ import annotations

import numpy as np
import pytest
from general_path import TritonPythonModel, forget, initialize_args, load_module
from general_path import answer as _answer
from general_path import request as _request
from general_path import same as _same

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.emit.model_source import model_py, writes_out
from repogen.ir import lower

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]


def _models(func, tmp_path, inputs=X, outputs=Y, strict=False, config=None):
    repo = Repository()
    repo.bind("M", func, inputs=inputs, outputs=outputs, config=config or ModelConfig(max_batch_size=8), strict=strict)
    spec = lower(repo).model("M")
    source = tmp_path / "model.py"
    source.write_bytes(model_py(spec, spec.versions[0]))
    module = load_module(source, "specialized_model_under_test")
    args = initialize_args(spec, "M", tmp_path)
    built = []
    for cls in (module.TritonPythonModel, TritonPythonModel):
        model = cls()
        model.configure(args, [func], strict=strict)
        built.append(model)
    return spec, built


CASES = {
    "declared": lambda x: {"y": x * 2},
    "float64 cast": lambda x: {"y": x.astype(np.float64)},
    "a row too many": lambda x: {"y": np.concatenate([x, x])},
    "a list": lambda x: [x + 1],
    "missing output": lambda x: {"z": x},
    "an extra output": lambda x: {"y": x, "z": x},
    "not contiguous": lambda x: {"y": np.asfortranarray(np.tile(x, (1, 2)))[:, ::2]},
    "raises": lambda x: (_ for _ in ()).throw(KeyError("boom")),
    "a string": lambda x: {"y": np.array([["abc"]] * len(x))},
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("strict", [False, True])
def test_every_path_answers_as_the_general_one(case, strict, tmp_path):
    spec, models = _models(batch(CASES[case]), tmp_path, strict=strict)
    assert writes_out(spec, spec.versions[0])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _same(models, _request(x=x))
    _same(models, _request(x=x), _request(x=x[:1]))  # several requests: _execute_many's straight line
    _same(models, *[_request(x=x[i : i + 1] + i) for i in range(2)], _request(x=x), _request(x=x[:1] * 3))
    _same(models, _request(x=x), _request(x=x[:, :2]))  # other dimensions differ: no concatenation


def test_a_class_models_batch_call_takes_the_straight_line_with_its_instance(tmp_path):
    class Scaled:
        """A class model as PyTriton's examples write one: state built once, ``@batch`` on ``__call__``."""

        def __init__(self):
            self.factor = np.float32(3)

        @batch
        def __call__(self, x):
            return {"y": x * self.factor}

    spec, models = _models(Scaled, tmp_path, strict=True)
    assert writes_out(spec, spec.versions[0])
    specialized = models[0]
    assert specialized.batch_call.__self__ is specialized.infer_func  # the method, bound to this instance
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert _same(models, _request(x=x), _request(x=x[:1])) == [
        {"y": ("<f4", (x * 3).tolist())},
        {"y": ("<f4", (x[:1] * 3).tolist())},
    ]


def test_the_straight_line_is_taken_and_a_failure_is_that_requests_answer(tmp_path):
    seen = []

    @batch
    def f(x):
        seen.append(x)
        if x[0, 0] < 0:
            raise ValueError("negative")
        return {"y": x * 2}

    _, (specialized, _general) = _models(f, tmp_path, strict=True)
    assert specialized.batch_call is f.__wrapped__
    x = np.ones((1, 4), np.float32)
    (answer,) = specialized.execute([_request(x=x)])
    assert _answer(answer) == {"y": ("<f4", [[2.0] * 4])}
    assert _answer(specialized.execute([_request(x=-x)])[0]) == "ValueError: negative"


def test_several_inputs_in_any_order_bytes_and_keywords(tmp_path):
    inputs = [
        Tensor(name="class", dtype=np.int64, shape=(1,)),
        Tensor(name="text", dtype=bytes, shape=(1,)),
        Tensor(name="b", dtype=np.float32, shape=(2,)),
    ]
    outputs = [Tensor(name="n", dtype=np.int64, shape=(1,)), Tensor(name="echo", dtype=bytes, shape=(1,))]

    @batch
    def f(b, text, **rest):
        return {"n": rest["class"] + b.shape[1], "echo": text}

    spec, models = _models(f, tmp_path, inputs=inputs, outputs=outputs, strict=True)
    assert b"**{'class': in0}" in model_py(spec, spec.versions[0])
    arrays = {
        "text": np.array([[b"hi"], [b"yo"]], dtype=object),
        "b": np.zeros((2, 2), np.float32),
        "class": np.array([[1], [2]], np.int64),
    }
    assert _same(models, _request(**arrays)) == [{"n": ("<i8", [[3], [4]]), "echo": ("|O", [[b"hi"], [b"yo"]])}]


def test_what_is_not_batch_over_a_function_keeps_the_general_template(tmp_path):
    repo = Repository()
    repo.bind("Plain", lambda requests: [{"y": r["x"]} for r in requests], inputs=X, outputs=Y)

    async def coro(x):
        return {"y": x}

    repo.bind("Async", batch(coro), inputs=X, outputs=Y)
    repo.bind("Unbatched", batch(lambda x: {"y": x}), inputs=X, outputs=Y, config=ModelConfig(batching=False))
    repo.bind("Batched", batch(lambda x: {"y": x}), inputs=X, outputs=Y)
    for value, name in (("no", "OnGpu"), ("yes", "OnCpu")):  # "no": inputs may stay on a GPU, as_numpy cannot read them
        config = ModelConfig(max_batch_size=8, parameters={"FORCE_CPU_ONLY_INPUT_TENSORS": value})
        repo.bind(name, batch(lambda x: {"y": x}), inputs=X, outputs=Y, config=config)
    spec = lower(repo)
    chosen = {m.name: writes_out(m, m.versions[0]) for m in spec.models}
    assert chosen == {
        "Async": False,
        "Batched": True,
        "OnCpu": True,
        "OnGpu": False,
        "Plain": False,
        "Unbatched": False,
    }
    assert b"specialized" in model_py(spec.model("Batched"), spec.model("Batched").versions[0])
    assert b"specialized" not in model_py(spec.model("Plain"), spec.model("Plain").versions[0])


def teardown_module():
    forget("specialized_model_under_test")


def test_several_requests_share_one_call_and_each_gets_its_rows(tmp_path):
    calls = []

    @batch
    def f(x):
        calls.append(x.shape)
        return {"y": x * 10}

    _, (specialized, general) = _models(f, tmp_path, strict=True)
    parts = [np.full((rows, 2), rows, np.float32) for rows in (1, 3, 2)]
    answers = _same([specialized, general], *[_request(x=p) for p in parts])
    assert calls == [(6, 2), (6, 2)]  # one call each, over the concatenated batch
    assert [a["y"][1] for a in answers] == [(p * 10).tolist() for p in parts]
    empty = np.zeros((0,), np.float32)  # a rank below the declared one: the general path answers it
    answers = _same([specialized, general], _request(x=parts[0]), _request(x=empty))
    assert "empty batch" in answers[1]


def test_an_optional_input_left_out_takes_the_general_path(tmp_path):
    inputs = [Tensor(name="x", dtype=np.float32, shape=(-1,)), Tensor(name="w", dtype=np.float32, shape=(-1,),
                                                                      optional=True)]  # fmt: skip

    @batch
    def f(x, w=None):
        return {"y": x * (1 if w is None else w)}

    spec, models = _models(f, tmp_path, inputs=inputs, strict=True)
    assert b"if len(tensors) != 2:" in model_py(spec, spec.versions[0])
    x = np.ones((1, 2), np.float32)
    assert _same(models, _request(x=x, w=x * 3)) == [{"y": ("<f4", [[3.0, 3.0]])}]
    assert _same(models, _request(x=x)) == [{"y": ("<f4", [[1.0, 1.0]])}]
    _same(models, _request(x=x), _request(x=x, w=x * 3))  # @batch refuses to merge them: the same message
    (tmp_path / "plain").mkdir()
    plain = _models(batch(lambda x: {"y": x}), tmp_path / "plain")[0]
    assert b"len(tensors)" not in model_py(plain, plain.versions[0])  # a required input is always there


def test_a_request_cancelled_while_queued_is_answered_cancelled_and_left_out_of_the_batch(tmp_path):
    rows = []

    @batch
    def double(x):
        rows.append(len(x))
        return {"y": x * 2}

    _, models = _models(double, tmp_path)
    requests = [_request(x=np.full((1, 2), v, np.float32)) for v in (1, 2, 3)]
    requests[1].cancelled = True
    answers = _same(models, *requests)  # freshly loaded: nothing says how long the requests waited, so they are asked
    assert answers[1] == "request cancelled before model 'M' ran it"
    assert answers[0] == {"y": ("<f4", [[2.0, 2.0]])} and answers[2] == {"y": ("<f4", [[6.0, 6.0]])}
    assert rows == [2, 2]  # each model's callable got the two live rows only
