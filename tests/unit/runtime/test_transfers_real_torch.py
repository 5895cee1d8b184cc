"""runtime/transfers.py on real torch tensors (torch's CPU build), only the device posed: CPU memory stands in for
the GPU (``Torch.placed`` answers device "cpu" where it would answer None), pinned memory is plain host memory and
the wait is a no-op. Whatever torch itself enforces (the truth value of a tensor of many elements, views and their
``_base``, dtype views) holds, which a hand-made stand-in does not: issue 57's bug, ``_runs`` taking a uint8 view for
a truth value, fails every batch of two or more requests here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from torch_cpu import torch

from repogen.runtime import frameworks
from repogen.runtime.transfers import Departure


@pytest.fixture
def posed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """torch's CPU tensors posing as device memory; the waits asked for, by device."""
    waits: list[str] = []
    monkeypatch.setattr(frameworks.Torch, "placed", lambda self, value: ("cpu", value.nbytes))
    monkeypatch.setattr(frameworks.Torch, "synchronize", lambda self, device: waits.append(device))

    def pinned(self: Any, nbytes: int) -> tuple[Any, np.ndarray]:
        tensor = torch.empty(nbytes, dtype=torch.uint8)  # pin_memory=True needs a CUDA build
        return tensor, tensor.numpy()

    monkeypatch.setattr(frameworks.Torch, "pinned", pinned)
    frameworks._BY_TYPE.clear()
    yield waits
    frameworks._BY_TYPE.clear()


@pytest.mark.parametrize("count", [1, 2, 4, 16])
def test_a_batchs_rows_of_one_tensor_leave_in_one_copy_each(posed: list[str], count: int) -> None:
    """``@batch``'s outputs: each request's rows a view of one tensor per output, as its split makes them."""
    y = torch.arange(count * 2 * 256, dtype=torch.float32).reshape(count * 2, 256)
    norm = y.norm(dim=1, keepdim=True)
    results = [{"y": y[2 * i : 2 * i + 2], "norm": norm[2 * i : 2 * i + 2]} for i in range(count)]
    departure = Departure(None, "M", output_memory="host", pool=0, arrival=None, warn=lambda line: None)
    sent = departure.prepare(results, lambda result: dict(result))
    for i, outputs in enumerate(sent):
        assert type(outputs["y"]) is np.ndarray and type(outputs["norm"]) is np.ndarray
        np.testing.assert_array_equal(outputs["y"], y[2 * i : 2 * i + 2].numpy())
        np.testing.assert_array_equal(outputs["norm"], norm[2 * i : 2 * i + 2].numpy())
    assert posed == ["cpu"]  # one wait for the batch


def test_tensors_of_their_own_leave_one_copy_each(posed: list[str]) -> None:
    """Outputs that do not lie one after another (an undecorated callable's): a copy each, one wait."""
    results = [{"y": torch.full((2, 3), float(i))} for i in range(3)]
    departure = Departure(None, "M", output_memory="host", pool=0, arrival=None, warn=lambda line: None)
    sent = departure.prepare(results, lambda result: dict(result))
    assert [outputs["y"].tolist() for outputs in sent] == [[[float(i)] * 3] * 2 for i in range(3)]
    assert posed == ["cpu"]
