"""Models that exercise user code in the server: a sibling helper module and a raising callable."""

import numpy as np
from helpers import normalize

from repogen import ModelConfig, PyTritonUnrecoverableError, Repository, Tensor, batch

models = Repository()


@models.model(
    "Normalize",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def normalize_model(x):
    return {"y": normalize(x)}


@models.model(
    "Fragile",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def fragile(requests):
    results = []
    for request in requests:
        x = request["x"]
        if (x < 0).any():
            raise ValueError("bad x")
        results.append({"y": np.sqrt(x)})
    return results


_CATEGORIES = {"cat", "dog", "emu"}  # a set: its pickled order must not follow the hash seed


@models.model(
    "Categories",
    inputs=[Tensor(name="word", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="known", dtype=np.bool_, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def categories(word):
    return {"known": np.array([[w.decode() in _CATEGORIES or w in {b"yak", b"gnu"}] for w in word[:, 0]])}


def _sloppy(requests):
    # float64 and a bare list where float32 arrays are declared
    return [{"y": np.asarray(r["x"], dtype=np.float64) * 2, "n": [[len(r["x"])]]} for r in requests]


for _name, _strict in (("Strict", True), ("Lenient", False)):
    models.bind(
        _name,
        infer_func=_sloppy,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="n", dtype=np.int32, shape=(1,))],
        config=ModelConfig(max_batch_size=4),
        strict=_strict,
    )


@models.model(
    "WithDefault",
    inputs=[
        Tensor(name="x", dtype=np.float32, shape=(1,)),
        Tensor(name="scale", dtype=np.float32, shape=(1,), optional=True),
    ],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def with_default(requests):
    return [{"y": r["x"] * (r["scale"] if "scale" in r else np.float32(10))} for r in requests]


@models.model(
    "Doomed",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="pid", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False),
)
def doomed(requests):
    import os

    if (requests[0]["x"] < 0).any():
        raise PyTritonUnrecoverableError("weights are corrupt")
    return [{"pid": np.array([os.getpid()], dtype=np.int64)} for _ in requests]


@models.model(
    "CallsFragile",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def calls_fragile(requests):
    """BLS into Fragile: its error must reach this model's client."""
    return [{"y": fragile(x=r["x"])["y"] + 1} for r in requests]


def _own_copy(x):
    """Whether the callable got a writable, 16-byte aligned array of its own (the stub's copy), per row."""
    return np.array([[x.flags.writeable, x.ctypes.data % 16 == 0]] * len(x))


@models.model(
    "InPlace",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="own", dtype=np.bool_, shape=(2,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def in_place(x):  # the specialized execute
    own = _own_copy(x)
    x *= 2
    return {"y": x, "own": own}


@models.model(
    "InPlaceRequests",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="own", dtype=np.bool_, shape=(2,))],
    config=ModelConfig(max_batch_size=8),
)
def in_place_requests(requests):  # the runtime's general path
    results = []
    for request in requests:
        x = request["x"]
        own = _own_copy(x)
        x += 1
        results.append({"y": x, "own": own})
    return results
