"""The "batch" decorators: ``@group_by_values`` and ``@pad_batch``, which sit below ``@batch``.

They receive the inputs as keyword arrays whose first axis is the whole batch, as PyTriton's do,
and reshape that batch before the wrapped callable sees it: split into sub-batches of equal
parameter values (``group_by_values``), or padded up to a size the model was compiled for
(``pad_batch``).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from .context import TritonModelConfig
from .decorator_base import Decorated, bad_outputs, gather, leading, split_kwargs, then
from .errors import InferenceError
from .request_decorators import batch
from .tensors import framework_of, host_array, row_range

# -- @group_by_values -----------------------------------------------------------------------------


def group_by_values(*keys: str, pad_fn: Callable[[Any], Any] | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Split a batch into sub-batches whose rows share the values of ``keys``; call once per sub-batch.

    Use it below ``@batch`` for per-request parameters (temperature, ...). The sub-batches' outputs
    are scattered back into the original row order; ``pad_fn`` (e.g. ``ConstantPadder(0)``) first
    evens out outputs whose trailing axes differ between sub-batches.
    """
    if not keys:
        raise ValueError("@group_by_values needs at least one input name to group by")
    return functools.partial(_GroupByValues, keys=tuple(keys), pad_fn=pad_fn)


class _GroupByValues(Decorated):
    def __init__(self, func: Callable[..., Any], keys: tuple[str, ...], pad_fn: Callable[[Any], Any] | None):
        if any(isinstance(layer, batch) for layer in _wrapped_layers(func)):
            raise ValueError(
                "The @group_by_values decorator must be used after the @batch decorator: put @batch above it"
            )
        super().__init__(func)
        self.keys = keys
        self.pad_fn = pad_fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs, special = split_kwargs(kwargs)
        size = batch_size(inputs, "@group_by_values")
        if size == 0:
            return self.__wrapped__(*args, **kwargs)
        groups = _group_rows(inputs, self.keys, size)
        results = [
            self.__wrapped__(*args, **{name: select_rows(value, rows) for name, value in inputs.items()}, **special)
            for rows in groups
        ]
        return gather(results, lambda done: self._merge(groups, done, size))

    def _merge(self, groups: list[np.ndarray], results: list[Any], size: int) -> Any:
        sequence = isinstance(results[0], (list, tuple))
        dicts = [_as_output_dict(r) for r in results]
        if self.pad_fn is not None:
            dicts = [_as_output_dict(r) for r in self.pad_fn(tuple(dicts))]
        merged = {name: _scatter(name, groups, [d.get(name) for d in dicts], size) for name in dicts[0]}
        return tuple(merged.values()) if sequence else merged


def select_rows(value: Any, rows: np.ndarray) -> Any:
    """The rows ``rows`` (numpy positions) of a batch, by numpy or by the tensor's framework, on its device."""
    if type(value) is np.ndarray:
        return value[rows]
    framework = framework_of(value)
    return value[rows] if framework is None else framework.rows(value, rows)


def batch_size(inputs: dict[str, Any], decorator: str) -> int:
    """The first axis of keyword inputs, for decorators that sit below ``@batch``."""
    for value in inputs.values():
        if np.ndim(value) == 0:
            raise InferenceError(f"{decorator} needs batched inputs; use it below @batch")
        return int(np.shape(value)[0])
    raise InferenceError(f"{decorator} received no inputs; use it below @batch")


def _wrapped_layers(func: Any) -> list[Any]:
    layers: list[Any] = []
    while func is not None and len(layers) < 100:
        layers.append(func)
        func = getattr(func, "__wrapped__", None)
    return layers


def _group_rows(inputs: dict[str, Any], keys: tuple[str, ...], size: int) -> list[np.ndarray]:
    """Row indices of each distinct combination of values, in PyTriton's (sorted-key) call order."""
    for key in keys:
        if key not in inputs:
            raise InferenceError(
                f"@group_by_values: no input {key!r} to group by; inputs are {sorted(inputs)} (give optional "
                "inputs a default with @fill_optionals)"
            )
    columns = [host_array(inputs[key]) for key in keys]  # compared on the host: a framework's tensors too
    row_keys = [tuple(_value_key(column[i]) for column in columns) for i in range(size)]
    order = sorted(range(size), key=row_keys.__getitem__)
    return [np.fromiter(g, dtype=np.intp) for _, g in itertools.groupby(order, key=row_keys.__getitem__)]


def _value_key(value: Any) -> Any:
    """A hashable, comparable key for one row: raw bytes for numbers, length-prefixed items for BYTES."""
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype == object or value.dtype.kind == "S":
        return _serialize_bytes(value)
    return value.tobytes()


def _serialize_bytes(value: np.ndarray) -> bytes:
    items = [item if isinstance(item, bytes) else str(item).encode("utf-8") for item in value.ravel().tolist()]
    body = b"".join(struct.pack("<I", len(item)) + item for item in items)
    return struct.pack("<I", len(body)) + body


def _as_output_dict(result: Any) -> dict[Any, Any]:
    if isinstance(result, dict):
        return result
    if isinstance(result, (list, tuple)):
        return dict(enumerate(result))
    bad_outputs(result, "@group_by_values")


def _scatter(name: Any, groups: list[np.ndarray], parts: list[Any], size: int) -> np.ndarray:
    """Write each group's rows of one output back to their places in the whole batch."""
    arrays = []
    for rows, part in zip(groups, parts, strict=True):
        if part is None:
            raise InferenceError(f"@group_by_values: output {name!r} is missing from some groups' results")
        array = part if framework_of(part) is not None else np.asarray(part)
        if array.ndim == 0 or array.shape[0] != len(rows):
            raise InferenceError(
                f"@group_by_values: output {name!r} has shape {array.shape} for a group of {len(rows)} rows"
            )
        arrays.append(array)
    trailing = {tuple(a.shape[1:]) for a in arrays}
    if len(trailing) > 1:
        raise InferenceError(
            f"@group_by_values: output {name!r} has different shapes across groups ({sorted(trailing)}); "
            "pass pad_fn=ConstantPadder(...) to pad them to a common shape"
        )
    framework = framework_of(arrays[0])
    if framework is not None:  # merged on the tensors' device: the groups' rows, put back in the batch's order
        return framework.rows(framework.concat(arrays), np.argsort(np.concatenate(groups), kind="stable"))
    dtype = _merged_dtype([a.dtype for a in arrays])
    merged = np.zeros((size, *arrays[0].shape[1:]), dtype=dtype)
    for rows, array in zip(groups, arrays, strict=True):
        merged[rows] = array
    return merged


def _merged_dtype(dtypes: list[np.dtype]) -> np.dtype:
    """One dtype for all groups; bytes/str widen instead of truncating the longer groups."""
    if any(d.kind == "O" for d in dtypes):
        return np.dtype(object)
    return np.result_type(*dtypes)


# -- @pad_batch -----------------------------------------------------------------------------------


class pad_batch(Decorated):  # noqa: N801 - PyTriton's public name
    """Repeat the last row of every input up to the nearest preferred batch size (else max_batch_size).

    For models compiled for fixed batch sizes. Put it below ``@batch``: the outputs' padded rows
    are dropped again here, so ``@batch`` sees exactly the rows it handed down.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        config = self._config(args, "@pad_batch")
        inputs, _ = split_kwargs(kwargs)
        size = batch_size(inputs, "@pad_batch")
        target = _padded_size(config, size)
        if not target > size > 0:
            return self.__wrapped__(*args, **kwargs)
        kwargs.update({name: _repeat_last(value, target) for name, value in inputs.items()})
        return then(self.__wrapped__(*args, **kwargs), lambda result: _unpad(result, config.model_name, size, target))


def _unpad(outputs: Any, model: str, size: int, target: int) -> Any:
    """The outputs of a padded batch, cut back to the rows that were not padding."""
    if not isinstance(outputs, (dict, list, tuple)):
        bad_outputs(outputs, "@pad_batch")
    named = _as_output_dict(outputs)
    for name, value in named.items():
        rows = leading(value)
        if rows == size:  # already cut back by the callable
            continue
        if rows != target:
            found = "no batch axis" if rows is None else f"{rows} rows"
            raise InferenceError(
                f"@pad_batch: model '{model}' output {name!r} has {found} for a batch padded from {size} to "
                f"{target} rows, expected {target} (or {size}); return one output row per input row"
            )
    cut = {name: row_range(value, 0, size) for name, value in named.items()}
    return tuple(cut.values()) if isinstance(outputs, (list, tuple)) else cut


def _padded_size(config: TritonModelConfig, size: int) -> int:
    if not config.batching:
        raise InferenceError(f"@pad_batch: model '{config.model_name}' does not batch (max_batch_size 0)")
    preferred = config.batcher.preferred_batch_size if config.batcher else None
    sizes = [*sorted(preferred or ()), config.max_batch_size]
    index = bisect.bisect_left(sizes, size)
    if index == len(sizes):
        raise InferenceError(f"@pad_batch: batch of {size} exceeds max_batch_size {config.max_batch_size}")
    return sizes[index]


def _repeat_last(value: Any, target: int) -> Any:
    framework = framework_of(value)
    if framework is not None:  # on the tensor's device
        return framework.concat([value, *[value[-1:, ...]] * (target - value.shape[0])])
    counts = np.ones(value.shape[0], dtype=np.int64)
    counts[-1] = target - value.shape[0] + 1
    return np.repeat(value, counts, axis=0)
