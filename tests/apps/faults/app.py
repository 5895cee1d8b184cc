"""Models that misbehave on purpose, for tests/integration/test_faults_served.py.

* ``models``: callables that break the contract (a row too many, ``SystemExit`` and friends, a
  string for a float output) beside ``Victim``, whose stub the tests SIGKILL, and ``Big``, whose
  outputs are as large as a request asks (shared-memory limits).
* ``live``: one model whose answer carries the build's generation (``FAULTS_GENERATION`` at build
  time), rebuilt under load by the hot-update tests.
* ``doomed``: ``PyTritonUnrecoverableError`` beside a healthy model; the whole server must stop.
"""

from __future__ import annotations

import os

import numpy as np

from repogen import DynamicBatcher, ModelConfig, PyTritonUnrecoverableError, Repository, Tensor, batch

GENERATION = float(os.environ.get("FAULTS_GENERATION", "1"))  # read at build time, pickled with the app

_X = Tensor(name="x", dtype=np.float32, shape=(-1,))
_Y = Tensor(name="y", dtype=np.float32, shape=(-1,))
_BATCHED = ModelConfig(max_batch_size=16, batcher=DynamicBatcher(max_queue_delay_microseconds=100))

models = Repository()


@models.model("Rows", inputs=[_X], outputs=[_Y], config=_BATCHED)
@batch
def one_row_too_many(x):
    return {"y": np.concatenate([x, x[:1]])}


@models.model("Exits", inputs=[_X], outputs=[_Y], config=_BATCHED)
@batch
def exits(x):
    """x[0, 0] picks what to raise: 1 SystemExit, 2 KeyboardInterrupt, 3 GeneratorExit; else echo."""
    code = int(x[0, 0])
    if code == 1:
        raise SystemExit(3)
    if code == 2:
        raise KeyboardInterrupt("stop")
    if code == 3:
        raise GeneratorExit("closed")
    return {"y": x}


@models.model("Text", inputs=[_X], outputs=[_Y], config=_BATCHED)
@batch
def text_for_float(x):
    return {"y": np.full(x.shape, "abc")}


@models.model(
    "Victim",
    inputs=[_X],
    outputs=[_Y, Tensor(name="pid", dtype=np.int64, shape=(1,))],
    config=_BATCHED,
)
@batch
def victim(x):
    return {"y": x * 2, "pid": np.full((len(x), 1), os.getpid(), dtype=np.int64)}


@models.model(
    "Big",
    inputs=[Tensor(name="n", dtype=np.int64, shape=(1,))],
    outputs=[_Y],
    config=ModelConfig(max_batch_size=0),
)
def big(requests):
    """n floats out for each request: the output's size is the client's to choose."""
    return [{"y": np.ones(int(r["n"][0]), dtype=np.float32)} for r in requests]


live = Repository()


@live.model("Live", inputs=[_X], outputs=[_Y], config=_BATCHED)
@batch
def live_model(x):
    return {"y": x + GENERATION}


doomed = Repository()


@doomed.model("Doomed", inputs=[_X], outputs=[_Y], config=ModelConfig(max_batch_size=0))
def doomed_model(requests):
    if any((r["x"] < 0).any() for r in requests):
        raise PyTritonUnrecoverableError("weights are corrupt")
    return [{"y": r["x"]} for r in requests]


@doomed.model("Bystander", inputs=[_X], outputs=[_Y], config=_BATCHED)
@batch
def bystander(x):
    return {"y": x}
