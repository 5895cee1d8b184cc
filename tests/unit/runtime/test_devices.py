"""runtime/devices.py beyond a batch's tensors, its mutants' cases (tests/mutation/survivors.md): which GPU ``cuda``
means in a framework the build saw the model import but that is not loaded yet, and in cupy alone; what an
out-of-memory failure frees where torch is older than 2.4 or absent; the whole out-of-memory answer.

cupy is not installed here: a module of that name stands in for its device API (``cuda.Device(i).use()``, the
default memory pool), the calls the runtime makes of it, recorded. torch's are the emulated GPU's."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from general_path import pb  # noqa: F401  (failures.py, which the answer's wording imports, needs the backend)
from torch_cpu import torch

from repogen.runtime.devices import free_gpu_caches, out_of_gpu_memory_message, use_device
from repogen.testing.emulated_gpu import GPU

CUPY = """
class _Device:
    def __init__(self, index):
        self.index = index

    def use(self):
        CALLS.append(("use", self.index))


class _Pool:
    def free_all_blocks(self):
        CALLS.append(("free_all_blocks",))


class cuda:
    Device = _Device


CALLS = []


def get_default_memory_pool():
    return _Pool()
"""


@pytest.fixture(autouse=True)
def _cupy_forgotten():
    yield
    sys.modules.pop("cupy", None)  # the stand-in imported from a test's directory


def _cupy_on_path(tmp_path: Path, monkeypatch: Any) -> None:
    """A ``cupy`` that ``import cupy`` finds, not yet imported (a payload the build saw import it)."""
    (tmp_path / "cupy.py").write_text(CUPY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)


def _cupy_loaded(monkeypatch: Any) -> types.ModuleType:
    module = types.ModuleType("cupy")
    exec(CUPY, module.__dict__)
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def test_a_framework_the_build_saw_imported_is_imported_and_pointed_at_the_instances_gpu(gpu, tmp_path, monkeypatch):
    _cupy_on_path(tmp_path, monkeypatch)
    use_device("cuda:1", imports=("cupy",))
    assert GPU.current_device() == 1  # torch, loaded
    assert sys.modules["cupy"].CALLS == [("use", 1)]  # cupy, imported for it


def test_a_framework_neither_loaded_nor_seen_imported_is_left_alone(gpu, tmp_path, monkeypatch):
    _cupy_on_path(tmp_path, monkeypatch)
    use_device("cuda:1", imports=())
    assert "cupy" not in sys.modules and GPU.current_device() == 1


def test_cupy_alone_is_pointed_at_the_instances_gpu(monkeypatch):
    """torch first in the runtime's order but not loaded (a cupy model's stub): cupy is still set."""
    cupy = _cupy_loaded(monkeypatch)
    with monkeypatch.context() as unloaded:
        unloaded.delitem(sys.modules, "torch")
        use_device("cuda:3")
    assert cupy.CALLS == [("use", 3)]


def test_an_out_of_memory_frees_cupys_pool_where_torch_is_not_loaded(monkeypatch):
    cupy = _cupy_loaded(monkeypatch)
    with monkeypatch.context() as unloaded:
        unloaded.delitem(sys.modules, "torch")
        free_gpu_caches()
    assert cupy.CALLS == [("free_all_blocks",)]


def test_an_out_of_memory_frees_torchs_gpu_cache_on_a_torch_without_the_page_locked_one(gpu, monkeypatch):
    """torch before 2.4 has no ``torch._C._host_emptyCache``: the GPU's cache is freed all the same."""
    monkeypatch.delattr(torch._C, "_host_emptyCache")
    free_gpu_caches()
    assert gpu.counts["empty_cache"] == 1 and gpu.counts["host empty_cache"] == 0


def test_the_out_of_memory_answer_in_full():
    exc = RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 1 has a total capacity of 79.10 GiB")
    assert out_of_gpu_memory_message("M", "cuda:1", exc) == (
        "model 'M' ran out of GPU memory on cuda:1 asking for 20.00 GiB (RuntimeError: CUDA out of memory. Tried to "
        "allocate 20.00 GiB. GPU 1 has a total capacity of 79.10 GiB); this batch was not served and the instance "
        "serves the next one: send fewer or smaller requests at once (lower max_batch_size), or give the model a GPU "
        "with more free memory"
    )
