"""Several models holding one object: the build says each gets its own copy, and refuses a shared thread.

PyTriton serves every bound model from one process, so models bound to one object share it; in the server
each model unpickles its own copy. PyTriton's online_learning_mnist binds `train` and `infer` to one started
thread: that is refused, with the fix. The real server shows the copies apart in
tests/integration/test_live_objects_served.py.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor
from repogen.build import build_repository
from repogen.errors import BuildError, SharedObjectWarning
from repogen.pickling import attribute_chains as reach

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
BATCHED = ModelConfig(max_batch_size=8)


def _classes() -> tuple[type, type]:
    class Learner:
        """PyTriton's OnlineLearning, without torch: one object, a method per endpoint."""

        def __init__(self):
            self.lock = threading.Lock()
            self.weights = [0.0]

        def train(self, requests):
            with self.lock:
                self.weights.append(1.0)
            return requests

        def infer(self, requests):
            return requests

    class OnlineLearning(threading.Thread, Learner):
        def __init__(self):
            threading.Thread.__init__(self, daemon=True, name="trainer")
            Learner.__init__(self)
            self.stop = threading.Event()

        def run(self):
            self.stop.wait(30)

    return Learner, OnlineLearning


Learner, OnlineLearning = _classes()


def _build(tmp_path, *bindings: tuple[str, Any]):
    models = Repository()
    for name, func in bindings:
        models.bind(name, infer_func=func, inputs=X, outputs=X, config=BATCHED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build_repository(models, tmp_path / "repo")
    return result, [str(w.message) for w in caught if issubclass(w.category, SharedObjectWarning)]


def test_two_models_bound_to_one_object_are_told_each_gets_its_own_copy(tmp_path):
    learner = Learner()
    result, messages = _build(tmp_path, ("train", learner.train), ("infer", learner.infer))
    assert len(messages) == 1  # the learner, not also the lock inside it
    assert messages[0].endswith(
        "model 'infer' (at infer_func -> method self) and model 'train' (at infer_func -> method self) both hold "
        "one test_shared_objects._classes.<locals>.Learner object: in the server each model gets its own copy, and "
        "changes one makes are not seen by the other. PyTriton served them from one process; if they must share it, "
        "bind one model that does both (an optional input can say which), or keep the shared "
        "state outside the server (a file, a database, another service)"
    )
    assert messages[0].startswith("tests/unit/emit/test_shared_objects.py:")  # where the first of them was bound
    assert [holders for holders in (s.holders for s in result.shared)] == [
        (("infer", "infer_func -> method self"), ("train", "infer_func -> method self"))
    ]


def test_a_lock_two_functions_share_is_named_with_its_chain(tmp_path):
    lock = threading.Lock()

    def first(requests):
        with lock:
            return requests

    def second(requests):
        with lock:
            return requests

    _, messages = _build(tmp_path, ("A", first), ("B", second))
    assert [m.split(": ", 1)[1] for m in messages] == [
        "model 'A' (at infer_func -> closure variable 'lock') and model 'B' (at infer_func -> closure variable "
        "'lock') both hold a threading.Lock(): in the server each model gets its own copy, and changes one makes are "
        "not seen by the other. PyTriton served them from one process; if they must share it, bind one model that "
        "does both (an optional input can say which), or keep the shared state outside the server "
        "(a file, a database, another service)"
    ]


def test_three_models_all_hold_it(tmp_path):
    learner = Learner()
    _, messages = _build(tmp_path, ("a", learner.train), ("b", learner.infer), ("c", learner.infer))
    assert len(messages) == 1
    assert (
        "model 'a' (at infer_func -> method self), model 'b' (at infer_func -> method self) and model 'c' (at "
        in (messages[0])
    )
    assert "all hold one" in messages[0] and "not seen by the others" in messages[0]


def _values() -> tuple[Any, Any, Any]:
    import collections
    import dataclasses
    import enum

    class Mode(enum.Enum):
        FAST = 1

    @dataclasses.dataclass(frozen=True)
    class Limits:
        top: int = 3

    Pair = collections.namedtuple("Pair", "a b")
    return Mode.FAST, Limits(), Pair(1, 2)


def test_values_that_cannot_change_are_shared_without_a_word(tmp_path):
    """An enum member, a frozen dataclass, a namedtuple of the user's: two copies of a value are the value."""
    mode, limits, pair = _values()

    def first(requests):
        return [mode, limits, pair] and requests

    def second(requests):
        return [mode, limits, pair] and requests

    result, messages = _build(tmp_path, ("A", first), ("B", second))
    assert messages == [] and result.shared == ()


def test_models_that_share_nothing_are_not_warned(tmp_path):
    result, messages = _build(tmp_path, ("train", Learner().train), ("infer", Learner().infer))
    assert messages == [] and result.shared == ()


def test_a_fused_ensemble_holding_its_own_steps_objects_is_not_one_more_copy(tmp_path):
    learner = Learner()
    models = Repository()
    y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
    step = models.bind("Step", infer_func=learner.infer, inputs=X, outputs=y, config=BATCHED)

    @models.ensemble("Fused", inputs=X, outputs=y, config=BATCHED, fuse=True)
    def fused(x):
        return {"y": step(x=x)["y"]}

    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedObjectWarning)
        assert build_repository(models, tmp_path / "repo").shared == ()


def test_online_learning_mnist_shares_a_started_thread_and_is_refused(tmp_path):
    online = OnlineLearning()
    online.start()
    try:
        with pytest.raises(BuildError) as info:
            _build(tmp_path, ("MnistTrain", online.train), ("MnistInfer", online.infer))
    finally:
        online.stop.set()
    message = str(info.value)
    assert message.startswith(f"{info.value.site}: model 'MnistInfer' and model 'MnistTrain' both hold a started ")
    assert (
        "threading.Thread (test_shared_objects._classes.<locals>.OnlineLearning) named 'trainer' (running)" in message
    )
    assert (
        "(model 'MnistInfer' at infer_func -> method self; model 'MnistTrain' at infer_func -> method self)" in message
    )
    assert "Bind one model that does both" in message
    assert "keep the shared state outside the server (a file, a database, another service)" in message
    assert not (tmp_path / "repo").exists()


def test_a_thread_held_inside_a_shared_object_is_refused_the_same_way(tmp_path):
    learner = Learner()
    learner.worker = threading.Thread(target=int, name="loader")
    with pytest.raises(
        BuildError, match=r"model 'infer' and model 'train' both hold a threading\.Thread named 'loader'"
    ):
        _build(tmp_path, ("train", learner.train), ("infer", learner.infer))


def test_a_thread_only_one_model_holds_keeps_the_single_model_error(tmp_path):
    learner = Learner()
    learner.worker = threading.Thread(target=int, name="loader")
    with pytest.raises(BuildError) as info:
        _build(tmp_path, ("train", learner.train), ("infer", Learner().infer))
    assert "model 'train': cannot pickle infer_func (a method) -> method self" in str(info.value)
    assert "both hold" not in str(info.value)


def test_the_walk_that_names_chains_is_bounded(monkeypatch):
    deep: list[Any] = []
    target = threading.Lock()
    level = deep
    for _ in range(50):
        level.append([])
        level = level[0]
    level.append(target)
    assert reach.walk([("infer_func", deep)], [id(target)]).chains == {}  # deeper than MAX_DEPTH
    wide = [[i] for i in range(100)] + [target]
    monkeypatch.setattr(reach, "LIMIT", 10)
    found = reach.walk([("infer_func", wide)], [id(target)])
    assert found.chains == {} and not found.complete
    monkeypatch.setattr(reach, "LIMIT", 1000)
    assert reach.walk([("infer_func", wide)], [id(target)]).chains == {id(target): "infer_func -> [100]"}
