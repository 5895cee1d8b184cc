"""onnxruntime alone, in one process: samples per second on a graph at a batch size and thread count.

    <venv with onnxruntime>/bin/python bench/onnx_ceiling.py MODEL.onnx BATCH THREADS SECONDS

The reference the served graph is measured against (same file, same batch, same intra-op threads):
what is left between the two is Triton, the Python backend's IPC and the runtime around the session.
Prints the rate as its last line.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import onnxruntime


def main(path: str, batch: int, threads: int, seconds: float) -> float:
    options = onnxruntime.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    (graph_input,) = session.get_inputs()
    x = np.zeros((batch, *graph_input.shape[1:]), np.float32)
    outputs = [o.name for o in session.get_outputs()]
    for _ in range(3):  # warm-up: the first runs allocate
        session.run(outputs, {graph_input.name: x})
    runs = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        session.run(outputs, {graph_input.name: x})
        runs += 1
    return runs * batch / (time.perf_counter() - began)


if __name__ == "__main__":
    print(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
