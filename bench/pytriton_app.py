"""PyTriton 0.7.0 serving the benchmark's ``Double`` function (run by ``bench/.venv-pytriton``).

This file must import neither repogen nor anything outside that venv: PyTriton pins numpy<2 and
repogen must never depend on it. The function body and the model configuration mirror
``bench/apps/app.py`` (``Double``) exactly. Usage: ``python pytriton_app.py HTTP GRPC METRICS``.
"""

from __future__ import annotations

import sys

import numpy as np
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

MAX_BATCH_SIZE = 64  # bench/apps/app.py: MAX_BATCH_SIZE


@batch
def double(x):
    return {"y": x * 2}


def main(http_port: int, grpc_port: int, metrics_port: int) -> None:
    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=http_port,
        grpc_address="127.0.0.1",
        grpc_port=grpc_port,
        metrics_address="127.0.0.1",
        metrics_port=metrics_port,
    )
    # PyTriton 0.7 restricts statistics (and more) to a random token by default; perf_analyzer reads the
    # server-side statistics as it does from any Triton, so the benchmark opens them, bound to 127.0.0.1.
    with Triton(config=config, security_config=TritonSecurityConfig(restricted_endpoints=[])) as triton:
        triton.bind(
            model_name="Double",
            infer_func=double,
            inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=MAX_BATCH_SIZE, batcher=DynamicBatcher()),
            strict=True,
        )
        triton.serve()  # until SIGINT/SIGTERM from bench/run.py


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:4]))
