"""GPU faults answered, not crashed: a batch out of GPU memory is answered with an error naming the model and what
it asked for, and the instance serves the next; outputs past the CUDA pool are answered through host memory, the
log naming the flag to raise (tests/apps/gpu/faults_app.py)."""

from __future__ import annotations

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from repogen.testing.client import PROTOCOLS, infer

APP = "tests/apps/gpu/faults_app.py:models"
VALUES = 24 << 20  # 96 MiB of float32 a row


@pytest.fixture(scope="module")
def server(gpu_build, gpu_serve):
    return gpu_serve(gpu_build(APP))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_out_of_gpu_memory_is_an_answer_and_the_next_request_serves(server, protocol):
    with pytest.raises(InferenceServerException) as failed:
        infer(protocol, server, "Greedy", {"gib": np.array([[100000.0]], dtype=np.float32)})
    message = str(failed.value)
    assert "model 'Greedy' ran out of GPU memory on cuda:0 asking for" in message, message
    assert "the instance serves the next one" in message, message
    answer = infer(protocol, server, "Greedy", {"gib": np.array([[0.01]], dtype=np.float32)})
    assert np.allclose(answer["y"], [[0.02]])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["LargeToHost", "LargeOnGpu"])
def test_outputs_larger_than_the_cuda_pool_are_answered(server, protocol, model):
    y = infer(protocol, server, model, {"n": np.array([[VALUES]], dtype=np.int64)})["y"]
    assert y.shape == (1, VALUES) and y[0, 1] == 0.5 and y[0, -1] == (VALUES - 1) * 0.5


def test_the_log_says_which_flag_keeps_them_on_the_gpu(server):
    infer("grpc", server, "LargeOnGpu", {"n": np.array([[VALUES]], dtype=np.int64)})
    log = server.log_text()
    assert "model 'LargeOnGpu': a batch's GPU outputs" in log and "--cuda-memory-pool-byte-size=<gpu>:<bytes>" in log
