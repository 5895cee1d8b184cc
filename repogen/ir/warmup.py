"""Lowering warmup requests, which Triton sends before a model is READY: repogen's ``Warmup`` (one kind of data for
every input) and PyTriton 0.7's ``ModelWarmup`` (each input its own dtype, shape and data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dsl.config import ModelWarmup, Warmup, WarmupInput
from ..errors import BuildError
from ..triton.dtypes import triton_data_type
from .spec import IOSpec, WarmupSpec


def lower_warmup(
    where: str,
    warmups: Sequence[Warmup] | None,
    inputs: Sequence[IOSpec],
    max_batch_size: int,
    model_warmups: Sequence[ModelWarmup] | None = None,
) -> tuple[WarmupSpec, ...]:
    """PyTriton's ``model_warmup`` first, then ``warmup``: Triton sends them in the order the config lists them."""
    specs = [_lower_model_warmup(where, w, inputs, max_batch_size) for w in model_warmups or ()]
    for warmup in warmups or ():
        if not isinstance(warmup, Warmup):
            raise BuildError(f"{where}: warmup entries must be repogen.Warmup, found {type(warmup).__name__}")
        label = f"{where}, warmup '{warmup.name}'"
        if warmup.data not in ("zero", "random"):
            raise BuildError(f"{label}: data must be 'zero' or 'random', found {warmup.data!r}")
        _check_counts(label, warmup.count, warmup.batch_size, max_batch_size)
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
            tensors.append((tensor.name, tensor.data_type, dims, warmup.data))
        specs.append(_spec(warmup.name, warmup.batch_size, warmup.count, tensors, max_batch_size))
    return tuple(specs)


def _lower_model_warmup(where: str, warmup: Any, inputs: Sequence[IOSpec], max_batch_size: int) -> WarmupSpec:
    if not isinstance(warmup, ModelWarmup):
        raise BuildError(f"{where}: model_warmup entries must be repogen.ModelWarmup, found {type(warmup).__name__}")
    label = f"{where}, model_warmup '{warmup.name}'"
    _check_counts(label, warmup.count, warmup.batch_size, max_batch_size)
    declared = {t.name: t for t in inputs}
    given = dict(warmup.inputs or {})
    unknown = sorted(set(given) - set(declared))
    missing = sorted(t.name for t in inputs if t.name not in given and not t.optional)
    if unknown or missing:
        wrong = ([f"unknown {unknown}"] if unknown else []) + ([f"missing {missing}"] if missing else [])
        raise BuildError(f"{label}: its inputs must be the model's: {'; '.join(wrong)} (declared: {sorted(declared)})")
    tensors = []
    for name, data in given.items():
        tensor, at = declared[name], f"{label}, input '{name}'"
        if not isinstance(data, WarmupInput):
            raise BuildError(f"{at}: expected a repogen.WarmupInput, found {type(data).__name__}")
        data_type = triton_data_type(data.dtype, at)
        if data_type != tensor.data_type:
            raise BuildError(f"{at}: dtype {data_type} differs from the input's declared {tensor.data_type}")
        dims = tuple(data.shape)
        fits = len(dims) == len(tensor.dims) and all(d == t or t == -1 for d, t in zip(dims, tensor.dims, strict=True))
        if not dims or any(not isinstance(d, int) or d < 1 for d in dims) or not fits:
            raise BuildError(
                f"{at}: shape {list(dims)} must be positive and fit the declared {list(tensor.dims)} (no batch axis)"
            )
        if data.zero_data:  # PyTriton's order: zero_data, then random_data, then input_data_file
            kind = "zero"
        elif data.random_data:
            kind = "random"
        elif data.input_data_file:
            raise BuildError(
                f"{at}: input_data_file={data.input_data_file!r} is not supported: Triton reads it from the model's "
                "warmup/ directory, which the build does not fill; use zero_data=True or random_data=True"
            )
        else:
            raise BuildError(f"{at}: no data: set zero_data=True or random_data=True")
        tensors.append((name, data_type, dims, kind))
    return _spec(warmup.name, warmup.batch_size, warmup.count, sorted(tensors), max_batch_size)


def _check_counts(label: str, count: int, batch_size: int, max_batch_size: int) -> None:
    if count < 1 or batch_size < 0 or (max_batch_size and batch_size > max_batch_size):
        raise BuildError(
            f"{label}: needs count >= 1 and 1 <= batch_size <= max_batch_size={max_batch_size} "
            f"(found count={count}, batch_size={batch_size})"
        )


def _spec(name: str, batch_size: int, count: int, tensors: Sequence[Any], max_batch_size: int) -> WarmupSpec:
    return WarmupSpec(name=name, batch_size=batch_size if max_batch_size else 0, count=count, inputs=tuple(tensors))
