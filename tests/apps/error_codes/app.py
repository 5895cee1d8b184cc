"""Callables that fail requests with error codes: the client's fault, not found, unavailable, and a bug.

``x`` says which: a negative value is the client's fault (InvalidArgumentError), 400 PyTriton's name for it, 404 an
item that does not exist, 503 a dependency that is down, 500 a bug (a plain ValueError: INTERNAL). ``Checked`` takes
the straight line of a generated ``@batch`` model, ``Listed`` (undecorated) the general path; both batch requests
for up to 200 ms, so that requests sent together share one call, and answer ``calls``: the sizes of the calls their
process made so far. ``Forward`` calls ``Checked`` through BLS and lets its error go; ``CodeOf`` catches it and
answers the code it carried. ``Pipeline`` and ``Fused`` are ``Checked`` then ``Double``, scheduled by Triton and
fused.
"""

import numpy as np

from repogen import (
    DynamicBatcher,
    InvalidArgumentError,
    ModelCallError,
    ModelConfig,
    NotFoundError,
    PyTritonBadParameterError,
    Repository,
    Tensor,
    UnavailableError,
    batch,
)

models = Repository()

F32 = np.float32
TOGETHER = ModelConfig(max_batch_size=4, batcher=DynamicBatcher(max_queue_delay_microseconds=200_000))
X = [Tensor(name="x", dtype=F32, shape=(1,))]
Y_CALLS = [Tensor(name="y", dtype=F32, shape=(1,)), Tensor(name="calls", dtype=bytes, shape=(1,))]
CALLS = []  # this process's calls, by size


def check(values):
    """Raise what ``values`` asks for (see the module's docstring)."""
    if (values == 404).any():
        raise NotFoundError(f"no item {int(values[values == 404][0])}")
    if (values == 503).any():
        raise UnavailableError("the item store does not answer")
    if (values == 400).any():
        raise PyTritonBadParameterError("x = 400 is a bad parameter")
    if (values < 0).any():
        raise InvalidArgumentError(f"x must be >= 0, found {values.min():g}")
    if (values == 500).any():
        raise ValueError("a bug")


def answer(x):
    CALLS.append(len(x))
    check(x)
    said = ",".join(map(str, CALLS)).encode()
    return {"y": x * 2, "calls": np.array([[said]] * len(x), dtype=object)}


@models.model("Checked", inputs=X, outputs=Y_CALLS, config=TOGETHER)
@batch
def checked(x):
    return answer(x)


@models.model("Listed", inputs=X, outputs=Y_CALLS, config=TOGETHER)
def listed(requests):
    x = np.concatenate([r["x"] for r in requests])
    result = answer(x)
    return [{"y": result["y"][i : i + 1], "calls": result["calls"][i : i + 1]} for i in range(len(requests))]


@models.model("Forward", inputs=X, outputs=Y_CALLS[:1], config=ModelConfig(max_batch_size=4))
@batch
def forward(x):
    return {"y": checked(x=x)["y"]}  # a ModelCallError goes on to this model's client with its code


@models.model(
    "CodeOf",
    inputs=X,
    outputs=[Tensor(name="code", dtype=bytes, shape=(1,)), Tensor(name="model", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def code_of(x):
    try:
        checked(x=x)
    except ModelCallError as exc:
        return {
            "code": np.array([[exc.code.encode()]] * len(x), dtype=object),
            "model": np.array([[exc.model.encode()]] * len(x), dtype=object),
        }
    return {"code": np.array([[b""]] * len(x), dtype=object), "model": np.array([[b""]] * len(x), dtype=object)}


@models.model("Double", inputs=[Tensor(name="y", dtype=F32, shape=(1,))],
              outputs=[Tensor(name="z", dtype=F32, shape=(1,))], config=ModelConfig(max_batch_size=4))  # fmt: skip
@batch
def double(y):
    return {"z": y * 2}


def pipeline(x):
    first = checked(x=x)
    return {"z": double(y=first["y"])["z"], "calls": first["calls"]}


Z = [Tensor(name="z", dtype=F32, shape=(1,)), Tensor(name="calls", dtype=bytes, shape=(1,))]
models.ensemble("Pipeline", inputs=X, outputs=Z, config=ModelConfig(max_batch_size=4))(pipeline)
models.ensemble("Fused", inputs=X, outputs=Z, config=TOGETHER, fuse=True)(pipeline)
