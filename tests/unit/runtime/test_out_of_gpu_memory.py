"""A batch that runs out of GPU memory, answered from a version's own files (repogen/testing/carried.py).

Where the model carries runtime/frameworks.py (it can meet a framework's tensors: emit/vendoring.py), the answer
names the model, the device and what was asked, and the frameworks' caches are freed for the next batch
(tests/unit/runtime/test_transfers.py on an emulated GPU, tests/gpu/test_gpu_faults.py on a real one). A numpy
model carries none of it: an error that reads like CUDA's (its own code's, a library's) is answered as any error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, batch, build_repository
from repogen.packages import PackageOptions
from repogen.testing.carried import answer, carried_modules

HERE = (str(Path(__file__).parent),)
IO = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(2,))],
    "outputs": [Tensor(name="y", dtype=np.float32, shape=(2,))],
}
OOM = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


@batch
def _greedy(x):
    raise RuntimeError(OOM)


def test_out_of_gpu_memory_is_said_where_frameworks_travel_and_is_any_error_where_they_do_not(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # `make frameworks`: the model that carries frameworks.py takes torch's tensors
    repo = Repository()
    repo.bind("Plain", infer_func=_greedy, config=ModelConfig(max_batch_size=8), **IO)
    repo.bind("Torch", infer_func=_greedy, config=ModelConfig(max_batch_size=8, tensors="torch"), **IO)
    out = tmp_path / "repo"
    build_repository(repo, out, roots=HERE, packages=PackageOptions(mode="record"))
    assert not {"frameworks", "devices"} & carried_modules(out / "Plain" / "1")
    assert {"frameworks", "devices"} <= carried_modules(out / "Torch" / "1")
    plain = answer(out / "Plain" / "1", {"x": [[1.0, 2.0]]})
    assert plain["code"] == "INTERNAL"
    assert plain["error"].startswith(f"RuntimeError: {OOM} (at test_out_of_gpu_memory.py:"), plain
    torch = answer(out / "Torch" / "1", {"x": [[1.0, 2.0]]})
    assert torch["code"] == "INTERNAL"
    assert torch["error"].startswith(
        f"model 'Torch' ran out of GPU memory on cpu asking for 2.00 GiB (RuntimeError: {OOM} (at "
    ), torch
    assert "the instance serves the next one" in torch["error"]
