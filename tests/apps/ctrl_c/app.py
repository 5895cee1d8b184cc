"""Ctrl+C on `repogen serve` (tests/integration/test_serve_ctrl_c.py): every instance's finalize must run.

``Closer`` is bound as a class with ``$REPOGEN_TEST_CLOSER_INSTANCES`` instances (read at build time, default 1);
each one's ``finalize`` writes a file named after its instance into ``$REPOGEN_TEST_FINALIZE_DIR`` (the server's
environment, passed down to its stubs), proving that it ran before the server was gone, and an ``atexit`` handler
writes ``atexit-<instance>`` there, proving that the stub's Python shut down normally after it (a stub that
crashes on its way out runs no ``atexit`` handler). ``Echo`` is a plain function beside it.
"""

import atexit
import os
import time
from pathlib import Path

import numpy as np

from repogen import InstanceGroup, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()
INSTANCES = int(os.environ.get("REPOGEN_TEST_CLOSER_INSTANCES", "1"))


class Closer:
    def __init__(self, context: ModelContext):
        self.name = f"{context.model_name}-{context.instance_name}"
        atexit.register(self._mark, f"atexit-{self.name}")

    @batch
    def __call__(self, x):
        return {"y": x}

    def finalize(self):
        self._mark(self.name)

    @staticmethod
    def _mark(name: str) -> None:
        folder = os.environ.get("REPOGEN_TEST_FINALIZE_DIR")
        if folder:
            Path(folder, name).write_text(f"{time.time():.6f}\n")


models.bind(
    model_name="Closer",
    infer_func=Closer,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(count=INSTANCES, kind="KIND_CPU")]),
)


@models.model(
    "Echo",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def echo(x):
    return {"y": x}
