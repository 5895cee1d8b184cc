"""A PyTriton example's ``server.py``, as people copy it, with ``pytriton.*`` imports swapped for ``repogen``.

Two models on one ``Triton``: ``AddSub`` (batched, two inputs, two outputs) and ``Identity`` (an optional input,
``scale``, multiplying when sent). ``python server.py --http-port P --grpc-port Q`` serves them until Ctrl+C.
"""

import argparse
import logging

import numpy as np

from repogen import ModelConfig, Tensor, Triton, TritonConfig, batch

logger = logging.getLogger("tests.apps.pytriton_style.server")


@batch
def _add_sub(a, b):
    return {"add": a + b, "sub": a - b}


@batch
def _identity(data, scale=None):
    return {"identity": data if scale is None else data * scale}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument("--grpc-port", type=int, default=8001)
    parser.add_argument("--metrics-port", type=int, default=8002)
    parser.add_argument("--verbose", action="store_true")
    # repogen's own, for the test suite's pairing: by default the server `repogen serve` would start
    parser.add_argument("--triton-release")
    parser.add_argument("--server-python")
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s - %(levelname)s - %(name)s: %(message)s",
    )
    config = TritonConfig(
        http_port=args.http_port, grpc_port=args.grpc_port, metrics_port=args.metrics_port, strict_readiness=True
    )
    with Triton(config=config, triton_release=args.triton_release, server_python=args.server_python) as triton:
        logger.info("Loading AddSub and Identity")
        triton.bind(
            model_name="AddSub",
            infer_func=_add_sub,
            inputs=[Tensor(name="a", dtype=np.float32, shape=(-1,)), Tensor(name="b", dtype=np.float32, shape=(-1,))],
            outputs=[
                Tensor(name="add", dtype=np.float32, shape=(-1,)),
                Tensor(name="sub", dtype=np.float32, shape=(-1,)),
            ],
            config=ModelConfig(max_batch_size=16),
            strict=True,
        )
        triton.bind(
            model_name="Identity",
            infer_func=_identity,
            inputs=[
                Tensor(name="data", dtype=np.float32, shape=(-1,)),
                Tensor(name="scale", dtype=np.float32, shape=(1,), optional=True),
            ],
            outputs=[Tensor(name="identity", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=16),
        )
        logger.info("Serving models")
        triton.serve()
    logger.info("Stopped")


if __name__ == "__main__":
    main()
