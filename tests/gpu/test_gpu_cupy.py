"""cupy's arrays on the GPU: tests/apps/gpu/cupy_app.py, where the server's Python can import cupy beside its numpy
1.26 (cupy 13; cupy 14 needs numpy 2, which NGC's containers pin away)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer


@pytest.fixture(scope="module")
def server(gpu_venv, gpu_build, gpu_serve):
    python = gpu_venv / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import cupy, numpy; print(cupy.__version__, numpy.__version__)"],
                           capture_output=True, text=True)  # fmt: skip
    if found.returncode != 0:
        last = (found.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"cupy does not import in the server's Python beside its numpy ({last}): cupy 13 serves there")
    return gpu_serve(gpu_build("tests/apps/gpu/cupy_app.py:models"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_cupy_output_is_sent_from_the_gpu(server, protocol):
    assert infer(protocol, server, "CupyOut", {"x": np.array([[1.0], [2.0]], dtype=np.float32)})["y"].tolist() == [
        [4.0],
        [8.0],
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cupy_inputs_arrive_on_the_gpu(server, protocol):
    out = infer(protocol, server, "CupyIn", {"x": np.array([[1.0], [2.0]], dtype=np.float32)})
    assert (out["y"].tolist(), out["on_gpu"].tolist()) == ([[5.0], [10.0]], [[1], [1]])
