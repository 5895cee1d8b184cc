"""JAX's tensors through python_backend's own DLPack on a stock server (tests/integration/test_stub_dlpack.py).

JAX is shipped inside the repository (the server's Python has numpy alone) and declared as the models'
framework (``tensors="jax.numpy"``), an array-API library like any other to the runtime. ``Bf16``: a BF16
input and output, which numpy cannot hold, so the input reaches the callable through the stub's
``Tensor.to_dlpack`` and the output leaves through its ``Tensor.from_dlpack``. ``JaxOut``: float32 in,
jax arrays out, one of them BF16. Both report what they were handed, so a test tells what came back from
what the callable saw.
"""

import jax
import jax.numpy as jnp
import numpy as np

from repogen import ModelConfig, Repository, Tensor

models = Repository()


@models.model(
    "Bf16",
    inputs=[Tensor(name="h", dtype="bfloat16", shape=(-1,))],
    outputs=[Tensor(name="h", dtype="bfloat16", shape=(-1,)), Tensor(name="kind", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=8, tensors="jax.numpy"),
    strict=True,
)
def bf16(requests):
    answers = []
    for request in requests:
        h = request["h"]
        kind = f"{'jax.Array' if isinstance(h, jax.Array) else type(h).__name__} {h.dtype} {h.device.platform}".encode()
        answers.append({"h": h * 2, "kind": np.full((h.shape[0], 1), kind, dtype=object)})
    return answers


@models.model(
    "JaxOut",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="half", dtype="bfloat16", shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
    strict=True,
)
def jax_out(requests):
    answers = []
    for request in requests:
        x = jnp.asarray(request["x"])
        answers.append({"y": jax.nn.relu(x) + 1, "half": (x / 2).astype(jnp.bfloat16)})
    return answers
