"""Lowering warmup requests, which Triton sends before a model is READY."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dsl.config import Warmup
from ..errors import BuildError
from .spec import IOSpec, WarmupSpec


def lower_warmup(
    where: str, warmups: Sequence[Warmup] | None, inputs: Sequence[IOSpec], max_batch_size: int
) -> tuple[WarmupSpec, ...]:
    specs = []
    for warmup in warmups or ():
        if not isinstance(warmup, Warmup):
            raise BuildError(f"{where}: warmup entries must be repogen.Warmup, found {type(warmup).__name__}")
        label = f"{where}, warmup '{warmup.name}'"
        if warmup.data not in ("zero", "random"):
            raise BuildError(f"{label}: data must be 'zero' or 'random', found {warmup.data!r}")
        if warmup.count < 1 or warmup.batch_size < 0 or (max_batch_size and warmup.batch_size > max_batch_size):
            raise BuildError(
                f"{label}: needs count >= 1 and 1 <= batch_size <= max_batch_size={max_batch_size} "
                f"(found count={warmup.count}, batch_size={warmup.batch_size})"
            )
        shapes: dict[str, Any] = dict(warmup.shapes or {})
        unknown = sorted(set(shapes) - {t.name for t in inputs})
        if unknown:
            raise BuildError(f"{label}: shapes name unknown inputs {unknown}")
        tensors = []
        for tensor in inputs:
            dims = tuple(shapes.get(tensor.name, tensor.dims))
            if any(not isinstance(d, int) or d < 1 for d in dims):
                raise BuildError(
                    f"{label}: input '{tensor.name}' has variable shape {list(tensor.dims)}; give its warmup shape "
                    f"in Warmup(shapes={{'{tensor.name}': (...)}})"
                )
            tensors.append((tensor.name, tensor.data_type, dims))
        specs.append(
            WarmupSpec(
                name=warmup.name,
                batch_size=warmup.batch_size if max_batch_size else 0,
                count=warmup.count,
                random=warmup.data == "random",
                inputs=tuple(tensors),
            )
        )
    return tuple(specs)
