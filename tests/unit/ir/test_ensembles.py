"""Ensembles are traced from Python; every broken pipeline is refused before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, Repository, Tensor, batch, build_repository
from repogen.emit.model_config import ensemble_config, to_text
from repogen.ir import lower

F1 = [Tensor(name="x", dtype=np.float32, shape=(-1,))]


def _repo(max_batch_size=8):
    repo = Repository()

    @repo.model(
        "Double",
        inputs=F1,
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=8),
    )
    @batch
    def double(x):
        return {"y": x * 2}

    @repo.model(
        "Pair",
        inputs=[
            Tensor(name="a", dtype=np.float32, shape=(-1,)),
            Tensor(name="b", dtype=np.float32, shape=(-1,), optional=True),
        ],
        outputs=[Tensor(name="s", dtype=np.float32, shape=(-1,)), Tensor(name="n", dtype=np.int32, shape=(1,))],
        config=ModelConfig(max_batch_size=max_batch_size),
    )
    @batch
    def pair(a, b=None):
        total = a + (b if b is not None else 0)
        return {"s": total, "n": np.full((len(a), 1), a.shape[1], dtype=np.int32)}

    return repo, double, pair


def _ensemble(repo, body, outputs=None, max_batch_size=8, inputs=None, name="Ens"):
    repo.ensemble(
        name,
        inputs=inputs or F1,
        outputs=outputs or [Tensor(name="out", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=max_batch_size),
    )(body)


def _error(repo) -> str:
    with pytest.raises(BuildError) as info:
        lower(repo)
    return str(info.value)


def test_traced_steps_and_config():
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(a=double(x=x)["y"], b=x)["s"]})
    (ens,) = lower(repo).ensembles
    assert [(s.model, s.input_map, s.output_map) for s in ens.steps] == [
        ("Double", (("x", "x"),), (("y", "Double_y"),)),
        ("Pair", (("a", "Double_y"), ("b", "x")), (("s", "out"),)),
    ]
    text = to_text(ensemble_config(ens))
    assert 'platform: "ensemble"' in text and "backend" not in text and "instance_group" not in text


def test_runs_in_process_and_nests():
    repo, double, pair = _repo()
    inner = repo.ensemble(
        "Inner",
        inputs=F1,
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=8),
    )(lambda x: {"y": double(x=x)["y"]})
    _ensemble(repo, lambda x: {"out": pair(a=inner(x=x)["y"], b=x)["s"]})
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    assert repo.local().infer("Ens", {"x": x})["out"].tolist() == [[3.0, 6.0]]
    assert [s.model for s in lower(repo).ensemble("Ens").steps] == ["Inner", "Pair"]


def test_unmapped_input():
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(b=x)["s"]})
    assert "ensemble 'Ens': step 1 (Pair) does not map Pair's required input 'a'; add it to input_map" in _error(repo)


def test_optional_input_may_stay_unmapped():
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(a=x)["s"]})
    assert lower(repo).ensembles[0].steps[0].input_map == (("a", "x"),)


def test_output_never_produced():
    repo, double, pair = _repo()
    _ensemble(
        repo,
        lambda x: {"out": x, "unused": double(x=x)["y"]},
        outputs=[Tensor(name="out", dtype=np.float32, shape=(-1,))],
    )
    assert "returns ['unused'], which are not declared outputs" in _error(repo)
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": x} if double(x=x) else {})
    message = _error(repo)
    assert "cannot branch on data" in message
    repo, double, pair = _repo()
    _ensemble(
        repo,
        lambda x: {"other": double(x=x)["y"]},
        outputs=[
            Tensor(name="out", dtype=np.float32, shape=(-1,)),
            Tensor(name="other", dtype=np.float32, shape=(-1,)),
        ],
    )
    assert "output 'out' is never produced by a step" in _error(repo)


def test_dtype_and_shape_mismatch():
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": double(x=pair(a=x)["n"])["y"]})
    assert (
        "tensor 'Pair_n' is TYPE_INT32 (step 1 (Pair) output 'n') but step 2 (Double) input 'x' expects TYPE_FP32"
        in _error(repo)
    )
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": double(x=x)["y"]}, inputs=[Tensor(name="x", dtype=np.float32, shape=(2, 2))])
    assert "tensor 'x' has shape [2, 2] (ensemble input 'x') but step 1 (Double) input 'x' expects [-1]" in _error(repo)


def test_model_not_in_repository():
    repo, double, pair = _repo()
    other, other_double, _ = _repo()
    _ensemble(repo, lambda x: {"out": other_double(x=x)["y"]})
    assert "calls model 'Double', which is not in this repository" in _error(repo)


def test_max_batch_size_over_a_step():
    repo, double, pair = _repo(max_batch_size=4)
    _ensemble(repo, lambda x: {"out": pair(a=x)["s"]}, max_batch_size=8)
    assert "ensemble's max_batch_size=8 exceeds the model's max_batch_size=4" in _error(repo)


def test_cycle_between_ensembles():
    repo, double, pair = _repo()
    handles = {}
    handles["A"] = repo.ensemble(
        "A", inputs=F1, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))], config=ModelConfig(max_batch_size=8)
    )(lambda x: {"y": handles["B"](x=x)["y"]})
    handles["B"] = repo.ensemble(
        "B", inputs=F1, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))], config=ModelConfig(max_batch_size=8)
    )(lambda x: {"y": handles["A"](x=x)["y"]})
    assert "ensembles form a cycle: A -> B -> A" in _error(repo)


def test_intermediate_name_collision():
    repo, double, pair = _repo()

    def body(x):
        first = double(x=x)["y"].named("mid")
        second = double(x=x)["y"].named("mid")
        return {"out": pair(a=first, b=second)["s"]}

    _ensemble(repo, body)
    assert "intermediate tensor name 'mid'" in _error(repo)
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(a=double(x=x)["y"].named("x"))["s"]})
    assert "collides with another tensor of the ensemble" in _error(repo)


def test_unused_input_and_constants():
    repo, double, pair = _repo()
    _ensemble(
        repo, lambda x, z: {"out": double(x=x)["y"]}, inputs=[*F1, Tensor(name="z", dtype=np.float32, shape=(1,))]
    )
    assert "ensemble input 'z' is not used by any step (tritonserver refuses the ensemble)" in _error(repo)
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(a=x, b=np.ones(2))["s"]})
    assert "input 'b' of model 'Pair' is a ndarray" in _error(repo)


def test_nothing_is_written_for_a_broken_pipeline(tmp_path):
    repo, double, pair = _repo()
    _ensemble(repo, lambda x: {"out": pair(b=x)["s"]})
    with pytest.raises(BuildError):
        build_repository(repo, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bls_call_to_a_model_of_another_repository():
    repo, double, pair = _repo()
    other, other_double, _ = _repo()

    @repo.model("Caller", inputs=F1, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
    def caller(requests):
        return [other_double(x=r["x"]) for r in requests]

    assert "model 'Caller' calls model 'Double' through BLS, but 'Double' is not in this repository" in _error(repo)


def test_bls_calls_are_recorded():
    repo, double, pair = _repo()

    @repo.model("Caller", inputs=F1, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
    def caller(requests):
        return [double(x=r["x"]) for r in requests]

    assert lower(repo).model("Caller").versions[0].calls == ("Double",)
    x = np.array([[1.5]], dtype=np.float32)
    assert repo.local().infer("Caller", {"x": x})["y"].tolist() == [[3.0]]
