"""PyTriton 0.7's warm-up (its docs' "Model warm-up" binding), the imports swapped: ``ModelConfig(model_warmup=
[ModelWarmup(name, batch_size, inputs={name: WarmupInput(dtype, shape, random_data=True | zero_data=True)},
count)])``. Triton sends the ``count`` requests before the model is READY; the callable keeps what it saw, and each
answer says it, so a client can tell the warm-up happened as declared.

    repogen build tests/apps/pytriton_warmup/app.py:triton -o repo
"""

import numpy as np

from repogen import ModelConfig, ModelWarmup, Tensor, Triton, WarmupInput, batch

_seen: list[tuple[int, bool, bool]] = []  # per call: rows, any INPUT_1 value non-zero, every INPUT_2 empty


@batch
def infer_fn(INPUT_1, INPUT_2):  # noqa: N803 (PyTriton's default names)
    _seen.append((len(INPUT_1), bool(np.any(INPUT_1 != 0)), all(value == b"" for value in INPUT_2.ravel())))
    rows, random, zero = _seen[0]
    column = np.ones((len(INPUT_1), 1), dtype=np.int64)
    return {
        "calls": column * len(_seen),
        "warm_rows": column * rows,
        "warm_random": column.astype(bool) & random,
        "warm_zero": column.astype(bool) & zero,
    }


warmup = ModelWarmup(
    name="first-batch",
    batch_size=2,
    inputs={
        "INPUT_1": WarmupInput(dtype=np.float32, shape=(4,), random_data=True),
        "INPUT_2": WarmupInput(dtype=np.bytes_, shape=(1,), zero_data=True),
    },
    count=2,
)

triton = Triton()
triton.bind(
    model_name="Warmed",
    infer_func=infer_fn,
    inputs=[Tensor(name="INPUT_1", dtype=np.float32, shape=(-1,)), Tensor(name="INPUT_2", dtype=np.bytes_, shape=(1,))],
    outputs=[
        Tensor(name="calls", dtype=np.int64, shape=(1,)),
        Tensor(name="warm_rows", dtype=np.int64, shape=(1,)),
        Tensor(name="warm_random", dtype=np.bool_, shape=(1,)),
        Tensor(name="warm_zero", dtype=np.bool_, shape=(1,)),
    ],
    config=ModelConfig(max_batch_size=16, model_warmup=[warmup]),
)
