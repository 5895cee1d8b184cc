"""A fused model's written-out ``execute`` (model_fused.py.tmpl) answers exactly as FusedPipeline does.

Each case builds a three-step fused pipeline, loads the built model twice (its generated
``model.py`` and the runtime's general ``TritonPythonModel``, both on the backend shim) and sends
both the same requests: answers and error messages must be the same, whichever step the straight
line left at.
"""

from __future__ import annotations

import numpy as np
import pytest
from general_path import TritonPythonModel, forget, initialize_args, load_module
from general_path import answer as _answer
from general_path import request as _request
from general_path import same as _same

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.emit.fused_model_source import fused_writes_out
from repogen.ir import lower

F32 = np.float32
X = [Tensor(name="x", dtype=F32, shape=(-1,))]
Y = [Tensor(name="y", dtype=F32, shape=(-1,))]
BATCHED = ModelConfig(max_batch_size=8)

# How a step may misbehave; each is tried at each of the three steps.
FAULTS = {
    "none": lambda y: {"y": y},
    "float64": lambda y: {"y": y.astype(np.float64)},
    "a list": lambda y: [y],
    "missing output": lambda y: {"z": y},
    "an extra output": lambda y: {"y": y, "z": y},
    "a row too many": lambda y: {"y": np.concatenate([y, y])},
    "not contiguous": lambda y: {"y": np.asfortranarray(np.tile(y, (1, 2)))[:, ::2]},
    "raises": lambda y: (_ for _ in ()).throw(KeyError("boom")),
    "a string": lambda y: {"y": np.array([["abc"]] * len(y))},
}


def _load(repo: Repository, tmp_path, name: str = "Fused"):
    """The built fused model twice: its model.py's class and the general one, both initialized."""
    spec = build_repository(repo, tmp_path / "repo").spec.fused_spec(name).model
    directory = tmp_path / "repo" / name
    module = load_module(directory / "1" / "model.py", "fused_model_under_test")
    args = initialize_args(spec, name, directory)
    built = []
    for cls in (module.TritonPythonModel, TritonPythonModel):
        model = cls()
        model.initialize(args)
        built.append(model)
    return built


def _chain(faulty: int, fault, strict: bool) -> Repository:
    """``y = ((x + 1) * 3) - 2`` in three steps, step ``faulty`` returning what ``fault`` makes of its answer."""
    repo = Repository()
    ops = [lambda x: x + 1, lambda x: x * 3, lambda x: x - 2]
    handles = []
    for index, op in enumerate(ops):

        def step(x, op=op, index=index):
            y = op(x)
            return fault(y) if index == faulty else {"y": y}

        handles.append(repo.bind(f"Step{index}", batch(step), inputs=X, outputs=Y, config=BATCHED, strict=strict))

    @repo.ensemble("Fused", inputs=X, outputs=Y, config=BATCHED, fuse=True)
    def pipeline(x):
        return {"y": handles[2](x=handles[1](x=handles[0](x=x)["y"])["y"])["y"]}

    return repo


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("faulty", [0, 1, 2])
@pytest.mark.parametrize("strict", [False, True])
def test_every_step_and_fault_answers_as_the_general_path(fault, faulty, strict, tmp_path):
    models = _load(_chain(faulty, FAULTS[fault], strict), tmp_path)
    assert models[0].infer_func.calls is not None
    x = np.arange(6, dtype=F32).reshape(2, 3)
    answers = _same(models, _request(x=x))
    if fault == "none":
        assert answers == [{"y": ("<f4", (((x + 1) * 3) - 2).tolist())}]
    _same(models, _request(x=x), _request(x=x[:1]))  # two requests: FusedPipeline's general path


def test_the_straight_line_is_taken(tmp_path, monkeypatch):
    specialized, _ = _load(_chain(0, FAULTS["none"], True), tmp_path)
    monkeypatch.setattr(TritonPythonModel, "finish_fused", lambda *a: pytest.fail("left the straight line"))
    monkeypatch.setattr(TritonPythonModel, "response", lambda *a: pytest.fail("left the straight line"))
    (answer,) = specialized.execute([_request(x=np.ones((1, 2), F32))])
    assert _answer(answer) == {"y": ("<f4", [[4.0, 4.0]])}


def test_fan_out_in_place_writes_bytes_and_odd_names(tmp_path):
    """A step writing into a tensor the answer also holds gets its own copy, as Triton gives each consumer."""
    repo = Repository()
    a = repo.bind(
        "Split",
        batch(lambda **k: {"left": k["in-put"] * 2, "right": k["in-put"] + 1}),
        inputs=[Tensor(name="in-put", dtype=F32, shape=(-1,))],
        outputs=[Tensor(name="left", dtype=F32, shape=(-1,)), Tensor(name="right", dtype=F32, shape=(-1,))],
        config=BATCHED,
    )

    def combine(left, right):
        left += right  # in place: "doubled" below is this tensor and must not see it
        return {"label": np.array([[f"{v:.1f}".encode()] for v in left.sum(axis=1)], dtype=object)}

    b = repo.bind(
        "Combine",
        batch(combine),
        inputs=[Tensor(name="left", dtype=F32, shape=(-1,)), Tensor(name="right", dtype=F32, shape=(-1,))],
        outputs=[Tensor(name="label", dtype=bytes, shape=(1,))],
        config=BATCHED,
    )
    inputs = [Tensor(name="in-put", dtype=F32, shape=(-1,))]
    outputs = [Tensor(name="doubled", dtype=F32, shape=(-1,)), Tensor(name="label", dtype=bytes, shape=(1,))]

    @repo.ensemble("Fused", inputs=inputs, outputs=outputs, config=BATCHED, fuse=True)
    def pipeline(**k):
        halves = a(**{"in-put": k["in-put"]})
        return {"doubled": halves["left"], "label": b(left=halves["left"], right=halves["right"])["label"]}

    models = _load(repo, tmp_path)
    x = np.arange(4, dtype=F32).reshape(2, 2)
    (answer,) = _same(models, _request(**{"in-put": x}))
    assert answer == {"doubled": ("<f4", (x * 2).tolist()), "label": ("|O", [[b"5.0"], [b"17.0"]])}
    assert "**{'in-put': in0}" in (tmp_path / "repo" / "Fused" / "1" / "model.py").read_text()


def test_an_empty_batch_and_a_missing_input_take_the_general_path(tmp_path):
    models = _load(_chain(0, FAULTS["none"], False), tmp_path)
    answers = _same(models, _request(x=np.zeros((0,), F32)))
    assert "empty batch" in answers[0]
    _same(models, _request())


def test_what_a_specialized_model_py_would_not_serve_keeps_the_general_template(tmp_path):
    repo = _chain(0, FAULTS["none"], False)

    class Stateful:  # takes the requests themselves: no @batch function to call
        def __call__(self, requests):
            return [{"y": request["x"]} for request in requests]

    step = repo.bind("Class", Stateful, inputs=X, outputs=Y, config=BATCHED)

    @repo.ensemble("WithClass", inputs=X, outputs=Y, config=BATCHED, fuse=True)
    def with_class(x):
        return {"y": step(x=x)["y"]}

    spec = lower(repo)
    assert fused_writes_out(spec.fused_spec("Fused"))
    assert not fused_writes_out(spec.fused_spec("WithClass"))
    build_repository(repo, tmp_path / "repo")
    assert "its steps written out" in (tmp_path / "repo" / "Fused" / "1" / "model.py").read_text()
    assert "its steps written out" not in (tmp_path / "repo" / "WithClass" / "1" / "model.py").read_text()
    models = _load(repo, tmp_path / "again", name="WithClass")
    assert models[0].infer_func.calls is None
    _same(models, _request(x=np.ones((2, 2), F32)))


def teardown_module():
    forget("fused_model_under_test")
