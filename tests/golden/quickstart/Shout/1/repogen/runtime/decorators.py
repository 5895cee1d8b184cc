"""PyTriton's decorators, with its semantics, for callables served by the runtime.

Each decorator returns a small callable object rather than a closure: the object pickles by
reference to this (vendored) module, only the user's function travels by value, and binding to
an instance works so that decorated methods of class models behave like PyTriton's.

Two calling conventions meet here, as in PyTriton: "request" decorators (``sample``, ``batch``,
``group_by_keys``, ``fill_optionals``) receive the list of requests as the last positional
argument; "batch" decorators (``group_by_values``, ``pad_batch``) sit below ``@batch`` and receive
inputs as keyword arrays. ``first_value`` and ``triton_context`` work in both.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import itertools
import struct
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from .context import TritonContext, TritonModelConfig, find_context
from .errors import InferenceError
from .padding import ConstantPadder

__all__ = [
    "ConstantPadder",
    "batch",
    "fill_optionals",
    "first_value",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "triton_context",
]

TRITON_CONTEXT_FIELD_NAME = "triton_context"  # the keyword @triton_context passes (PyTriton's name)
# Keywords that travel beside the input arrays and are never treated as tensors.
_SPECIAL_KEYS = frozenset({"__triton_context__", TRITON_CONTEXT_FIELD_NAME})


class _Decorated:
    """Base for decorator objects: forwards attributes and binds like a function."""

    def __init__(self, func: Callable[..., Any]):
        # A class's or another decorator's __dict__ is not metadata: copy names only.
        updated = () if isinstance(func, (type, _Decorated)) else functools.WRAPPER_UPDATES
        functools.update_wrapper(self, func, updated=updated)
        self.__wrapped__ = func

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _context(self, head: tuple[Any, ...]) -> TritonContext | None:
        """PyTriton looks on the instance first, then on the callable; the process's context last."""
        return find_context(head[0] if head else None, self)

    def _config(self, head: tuple[Any, ...], decorator: str) -> TritonModelConfig:
        context = self._context(head)
        if context is None:
            raise InferenceError(
                f"{decorator} needs the model's configuration, but no triton context is bound to "
                f"{getattr(self, '__qualname__', self)!r}; the runtime binds it when serving (in tests: "
                "repogen.runtime.bind_context(infer_func, TritonContext(...)))"
            )
        return context.model_config


# -- shared helpers -------------------------------------------------------------------------------


def _split_requests(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Sequence[Any]]:
    """The request list is the last positional argument; anything before it is ``self``."""
    if not args:
        raise InferenceError("decorated infer_func called without the list of requests")
    return args[:-1], args[-1]


def _request_size(request: Any) -> int:
    for value in request.values():
        return int(value.shape[0]) if np.ndim(value) else 1
    return 0


def _split_kwargs(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Input arrays apart from the context keywords that travel with them."""
    inputs = {k: v for k, v in kwargs.items() if k not in _SPECIAL_KEYS}
    return inputs, {k: v for k, v in kwargs.items() if k in _SPECIAL_KEYS}


def _then(result: Any, post: Callable[[Any], Any]) -> Any:
    """Apply ``post`` to a result, to each step of a (async) generator (streaming), or once awaited."""
    if type(result) is dict:  # the common case; three inspect.is* calls cost ~1.5 µs per call
        return post(result)
    if inspect.isgenerator(result):
        return (post(item) for item in result)
    if inspect.isasyncgen(result):
        return _async_steps(result, post)
    if inspect.isawaitable(result):
        return _await_then(result, post)
    return post(result)


async def _async_steps(result: Any, post: Callable[[Any], Any]) -> Any:
    async for item in result:
        yield post(item)


async def _await_then(result: Any, post: Callable[[Any], Any]) -> Any:
    return post(await result)


def _gather(results: list[Any], post: Callable[[list[Any]], Any]) -> Any:
    """Combine the results of several calls of the wrapped callable, awaiting them if async."""
    if any(inspect.isawaitable(r) for r in results):
        return _await_all(results, post)
    return post(results)


async def _await_all(results: list[Any], post: Callable[[list[Any]], Any]) -> Any:
    return post([await r if inspect.isawaitable(r) else r for r in results])


def _leading(value: Any) -> int | None:
    shape = np.shape(value) if isinstance(value, (np.ndarray, list, tuple)) else getattr(value, "shape", None)
    return int(shape[0]) if shape else None


# -- @sample --------------------------------------------------------------------------------------


class sample(_Decorated):  # noqa: N801 - PyTriton's public name
    """Call the function with each request's inputs as keyword arrays (for non-batching models).

    PyTriton passes the first request only, since a model without batching receives one request
    per call; here every request is handled in turn, which is the same for that case.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = _split_requests(args)
        results = [self.__wrapped__(*head, **kwargs, **request) for request in requests]
        if len(results) == 1:
            return _then(results[0], lambda outputs: [_check_outputs(outputs, "@sample")])
        return _gather(results, lambda done: [_check_outputs(r, "@sample") for r in done])


def _check_outputs(outputs: Any, decorator: str) -> Any:
    if isinstance(outputs, (dict, list, tuple)):
        return outputs
    _bad_outputs(outputs, decorator)


def _bad_outputs(outputs: Any, decorator: str) -> NoReturn:
    raise InferenceError(
        f"a {decorator} function must return a dict of output arrays (or a list/tuple in the declared "
        f"output order); it returned {type(outputs).__name__}"
    )


# -- @batch ---------------------------------------------------------------------------------------


class batch(_Decorated):  # noqa: N801 - PyTriton's public name
    """Gather a list of requests into one batch of keyword arrays and split the outputs back.

    The callable receives each input as one array whose first axis is the concatenation of every
    request's batch, and returns a dict (or a list/tuple in the declared output order) of arrays
    with the same first axis. Outputs may be longer (``@pad_batch``): the padding is dropped.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = _split_requests(args)
        first = requests[0]
        if len(requests) == 1:  # the hot path: nothing to merge, usually nothing to split
            outputs = self.__wrapped__(*head, **kwargs, **first)
            rows = _request_size(first)
            if type(outputs) is dict and all(
                type(v) is np.ndarray and v.ndim and v.shape[0] == rows for v in outputs.values()
            ):
                return [outputs]
            return _then(outputs, lambda result: _split_outputs(result, [rows]))
        names = first.keys()
        for other in requests[1:]:
            if other.keys() != names:
                raise InferenceError(
                    f"@batch cannot merge requests with different inputs: {sorted(names)} vs "
                    f"{sorted(other.keys())}; mark optional inputs and use @fill_optionals or "
                    "@group_by_keys, or bind without @batch"
                )
        inputs = {name: np.concatenate([r[name] for r in requests]) for name in names}
        outputs = self.__wrapped__(*head, **kwargs, **inputs)
        sizes = [_request_size(r) for r in requests]
        return _then(outputs, lambda result: _split_outputs(result, sizes))


def _split_outputs(outputs: Any, sizes: list[int]) -> list[Any]:
    """Cut batched outputs into one result per request, keeping dict or sequence form."""
    if isinstance(outputs, dict):
        items = list(outputs.items())
    elif isinstance(outputs, (list, tuple)):
        items = list(enumerate(outputs))
    else:
        _bad_outputs(outputs, "@batch")
    total = sum(sizes)
    if len(sizes) == 1 and all(type(v) is np.ndarray and v.ndim and v.shape[0] == total for _, v in items):
        return [outputs]  # the common single-request case: no slicing, no copies, nothing to re-check
    _check_batch_sizes(items, total, sizes)
    results: list[Any] = []
    start = 0
    for size in sizes:
        end = start + size
        cut = [(name, value[start:end]) for name, value in items]
        results.append(dict(cut) if isinstance(outputs, dict) else tuple(value for _, value in cut))
        start = end
    return results


def _check_batch_sizes(items: list[tuple[Any, Any]], total: int, sizes: list[int]) -> None:
    for name, value in items:
        rows = _leading(value)
        if rows is None or rows < total:
            found = "no batch axis" if rows is None else f"{rows} rows"
            raise InferenceError(
                f"@batch: output {name!r} has {found}, expected a first axis of {total} (the requests' "
                f"batch sizes {sizes} concatenated)"
            )


# -- @group_by_keys -------------------------------------------------------------------------------


class group_by_keys(_Decorated):  # noqa: N801 - PyTriton's public name
    """Call the function once per set of requests that share the same input names.

    Put it above ``@batch`` when some inputs are optional: ``@batch`` can only stack requests that
    carry the same inputs. Results come back in the original request order.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = _split_requests(args)
        order = sorted(range(len(requests)), key=lambda i: sorted(requests[i].keys()))
        groups = [list(g) for _, g in itertools.groupby(order, key=lambda i: sorted(requests[i].keys()))]
        results = [self.__wrapped__(*head, [requests[i] for i in group], **kwargs) for group in groups]
        return _gather(results, lambda done: _ungroup(groups, done, len(requests)))


def _ungroup(groups: list[list[int]], results: list[Any], count: int) -> list[Any]:
    merged: list[Any] = [None] * count
    for group, result in zip(groups, results, strict=True):
        if not isinstance(result, (list, tuple)) or len(result) != len(group):
            found = len(result) if isinstance(result, (list, tuple)) else type(result).__name__
            raise InferenceError(
                f"@group_by_keys: the wrapped function returned {found} result(s) for a group of "
                f"{len(group)} request(s); it must return one per request (use @batch below it)"
            )
        for index, value in zip(group, result, strict=True):
            merged[index] = value
    return merged


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


class _GroupByValues(_Decorated):
    def __init__(self, func: Callable[..., Any], keys: tuple[str, ...], pad_fn: Callable[[Any], Any] | None):
        if any(isinstance(layer, batch) for layer in _wrapped_layers(func)):
            raise ValueError(
                "The @group_by_values decorator must be used after the @batch decorator: put @batch above it"
            )
        super().__init__(func)
        self.keys = keys
        self.pad_fn = pad_fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs, special = _split_kwargs(kwargs)
        size = _batch_size(inputs, "@group_by_values")
        if size == 0:
            return self.__wrapped__(*args, **kwargs)
        groups = _group_rows(inputs, self.keys, size)
        results = [
            self.__wrapped__(*args, **{name: value[rows] for name, value in inputs.items()}, **special)
            for rows in groups
        ]
        return _gather(results, lambda done: self._merge(groups, done, size))

    def _merge(self, groups: list[np.ndarray], results: list[Any], size: int) -> Any:
        sequence = isinstance(results[0], (list, tuple))
        dicts = [_as_output_dict(r) for r in results]
        if self.pad_fn is not None:
            dicts = [_as_output_dict(r) for r in self.pad_fn(tuple(dicts))]
        merged = {name: _scatter(name, groups, [d.get(name) for d in dicts], size) for name in dicts[0]}
        return tuple(merged.values()) if sequence else merged


def _wrapped_layers(func: Any) -> list[Any]:
    layers: list[Any] = []
    while func is not None and len(layers) < 100:
        layers.append(func)
        func = getattr(func, "__wrapped__", None)
    return layers


def _batch_size(inputs: dict[str, Any], decorator: str) -> int:
    for value in inputs.values():
        if np.ndim(value) == 0:
            raise InferenceError(f"{decorator} needs batched inputs; use it below @batch")
        return int(np.shape(value)[0])
    raise InferenceError(f"{decorator} received no inputs; use it below @batch")


def _group_rows(inputs: dict[str, Any], keys: tuple[str, ...], size: int) -> list[np.ndarray]:
    """Row indices of each distinct combination of values, in PyTriton's (sorted-key) call order."""
    for key in keys:
        if key not in inputs:
            raise InferenceError(
                f"@group_by_values: no input {key!r} to group by; inputs are {sorted(inputs)} (give optional "
                "inputs a default with @fill_optionals)"
            )
    columns = [inputs[key] for key in keys]
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
    _bad_outputs(result, "@group_by_values")


def _scatter(name: Any, groups: list[np.ndarray], parts: list[Any], size: int) -> np.ndarray:
    """Write each group's rows of one output back to their places in the whole batch."""
    arrays = []
    for rows, part in zip(groups, parts, strict=True):
        if part is None:
            raise InferenceError(f"@group_by_values: output {name!r} is missing from some groups' results")
        array = np.asarray(part)
        if array.ndim == 0 or array.shape[0] != len(rows):
            raise InferenceError(
                f"@group_by_values: output {name!r} has shape {array.shape} for a group of {len(rows)} rows"
            )
        arrays.append(array)
    trailing = {a.shape[1:] for a in arrays}
    if len(trailing) > 1:
        raise InferenceError(
            f"@group_by_values: output {name!r} has different shapes across groups ({sorted(trailing)}); "
            "pass pad_fn=ConstantPadder(...) to pad them to a common shape"
        )
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


# -- @fill_optionals ------------------------------------------------------------------------------


def fill_optionals(**defaults: Any) -> Callable[[Callable[..., Any]], Any]:
    """Give requests that omit an optional input its default (a numpy array without the batch axis).

    Put it at the top of the stack so that ``@group_by_keys``/``@batch`` below see uniform requests.
    For a batching model the default is repeated once per row of the request.
    """
    not_arrays = {name: value for name, value in defaults.items() if not isinstance(value, np.ndarray)}
    if not_arrays:
        listed = ", ".join(f"{name}={value!r}" for name, value in not_arrays.items())
        raise TypeError(f"Could not use {listed} defaults as they are not NumPy arrays (@fill_optionals)")
    return functools.partial(_FillOptionals, defaults=dict(defaults))


class _FillOptionals(_Decorated):
    def __init__(self, func: Callable[..., Any], defaults: dict[str, np.ndarray]):
        super().__init__(func)
        self.defaults = defaults
        self._checked: object = None  # the config the defaults were last validated against

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = _split_requests(args)
        config = self._config(head, "@fill_optionals")
        if self._checked is not config:
            self.defaults = _validated_defaults(self.defaults, config)
            self._checked = config
        for request in requests:
            self._fill(request, config.batching)
        return self.__wrapped__(*args, **kwargs)

    def _fill(self, request: Any, batching: bool) -> None:
        missing = [name for name in self.defaults if name not in request]
        if not missing:
            return
        rows = _request_size(request) if request else 1
        for name in missing:
            value = self.defaults[name]
            request[name] = np.tile(value, (rows,) + (1,) * value.ndim) if batching else value

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_checked": None}


def _validated_defaults(defaults: dict[str, np.ndarray], config: TritonModelConfig) -> dict[str, np.ndarray]:
    """Check names, dtypes and shapes against the declared inputs; BYTES defaults become object arrays."""
    inputs = {spec.name: spec for spec in config.inputs}
    unknown = sorted(set(defaults) - set(inputs))
    if unknown:
        raise InferenceError(
            f"@fill_optionals: model '{config.model_name}' has no input(s) {', '.join(unknown)}; "
            f"its inputs are {sorted(inputs)}"
        )
    checked = {}
    for name, value in defaults.items():
        spec = inputs[name]
        checked[name] = _default_matching(name, value, np.dtype(spec.dtype), spec.shape)
    return checked


def _default_matching(name: str, value: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind == "O":
        if value.dtype.kind not in "SUO":
            raise InferenceError(f"@fill_optionals: default for BYTES input {name!r} has dtype {value.dtype}")
        value = value.astype(object) if value.dtype != object else value
        value = np.vectorize(lambda v: v.encode("utf-8") if isinstance(v, str) else v, otypes=[object])(value)
    elif value.dtype != dtype:
        raise InferenceError(
            f"@fill_optionals: could not use {name}: dtype={value.dtype} expected_dtype={dtype}; the default "
            "must have the input's declared dtype"
        )
    if not _shape_fits(value.shape, shape):
        raise InferenceError(
            f"@fill_optionals: could not use {name}: shape={value.shape} expected_shape={shape}; give the "
            "default without the batch axis"
        )
    return value


def _shape_fits(have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    """PyTriton's rule: same rank, and every declared dimension is -1 or equal."""
    return len(have) == len(want) and all(w in (-1, h) for h, w in zip(have, want, strict=True))


# -- @pad_batch -----------------------------------------------------------------------------------


class pad_batch(_Decorated):  # noqa: N801 - PyTriton's public name
    """Repeat the last row of every input up to the nearest preferred batch size (else max_batch_size).

    For models compiled for fixed batch sizes. Put it below ``@batch``, which drops the padded
    rows of the outputs.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        config = self._config(args, "@pad_batch")
        inputs, _ = _split_kwargs(kwargs)
        size = _batch_size(inputs, "@pad_batch")
        target = _padded_size(config, size)
        if target > size > 0:
            kwargs.update({name: _repeat_last(value, target) for name, value in inputs.items()})
        return self.__wrapped__(*args, **kwargs)


def _padded_size(config: TritonModelConfig, size: int) -> int:
    if not config.batching:
        raise InferenceError(f"@pad_batch: model '{config.model_name}' does not batch (max_batch_size 0)")
    preferred = config.batcher.preferred_batch_size if config.batcher else None
    sizes = [*sorted(preferred or ()), config.max_batch_size]
    index = bisect.bisect_left(sizes, size)
    if index == len(sizes):
        raise InferenceError(f"@pad_batch: batch of {size} exceeds max_batch_size {config.max_batch_size}")
    return sizes[index]


def _repeat_last(value: np.ndarray, target: int) -> np.ndarray:
    counts = np.ones(value.shape[0], dtype=np.int64)
    counts[-1] = target - value.shape[0] + 1
    return np.repeat(value, counts, axis=0)


# -- @first_value ---------------------------------------------------------------------------------


def first_value(
    *keys: str, squeeze_single_values: bool = True, strict: bool = True
) -> Callable[[Callable[..., Any]], Any]:
    """Replace the selected inputs by their first row: one value per batch, e.g. a temperature.

    With ``strict`` every row must be equal; with ``squeeze_single_values`` a one-element row
    becomes a numpy scalar. Works below ``@batch`` (keyword arrays) or on the list of requests.
    """
    reserved = [key for key in keys if key in _SPECIAL_KEYS]
    if reserved:
        raise ValueError(
            f"The keys {', '.join(reserved)} are not allowed as keys for @first_value wrapper; "
            f"they are reserved: {', '.join(sorted(_SPECIAL_KEYS))}"
        )
    return functools.partial(_FirstValue, keys=tuple(keys), squeeze_single_values=squeeze_single_values, strict=strict)


class _FirstValue(_Decorated):
    def __init__(self, func: Callable[..., Any], keys: tuple[str, ...], squeeze_single_values: bool, strict: bool):
        super().__init__(func)
        self.keys = keys
        self.squeeze_single_values = squeeze_single_values
        self.strict = strict

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs, _ = _split_kwargs(kwargs)
        head = args if inputs else args[:-1]
        context = self._context(head)
        if context is not None and not context.model_config.batching:
            raise InferenceError("The @first_value decorator can only be used with models that support batching.")
        if inputs:
            kwargs.update(self._replace(inputs))
            return self.__wrapped__(*args, **kwargs)
        head, requests = _split_requests(args)
        for request in requests:
            request.update(self._replace(request))
        return self.__wrapped__(*head, requests, **kwargs)

    def _replace(self, inputs: Any) -> dict[str, Any]:
        return {key: self._first(key, inputs[key]) for key in self.keys if key in inputs}

    def _first(self, name: str, values: Any) -> Any:
        values = np.asarray(values)
        if values.ndim == 0 or values.shape[0] == 0:
            raise InferenceError(f"@first_value: input {name!r} has shape {values.shape}; expected a batch axis")
        if self.strict and not bool(np.all(values == values[:1])):
            raise InferenceError(
                f"The values on the {name!r} input are not equal. To proceed, either disable strict mode in "
                f"@first_value wrapper or ensure that the values always are consistent. The current values of "
                f"{name!r} are {values!r}."
            )
        first = values[0]
        if self.squeeze_single_values and not np.isscalar(first) and all(n == 1 for n in np.shape(first)):
            first = np.squeeze(first)[()]
        return first


# -- @triton_context ------------------------------------------------------------------------------


class triton_context(_Decorated):  # noqa: N801 - PyTriton's public name
    """Pass the model's :class:`TritonContext` as the ``triton_context`` keyword argument.

    ``triton_context.model_config`` (or PyTriton's ``model_configs[infer_func]``) describes the
    model's inputs, outputs and batching; the context also names the instance and its device.
    Decorating a class passes it to the constructor.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        context = self._context(args)
        if context is None:
            raise InferenceError(
                "Wrapped function or object must bound with triton to get __triton_context__: no triton "
                "context is bound (the runtime binds it when serving; in tests use repogen.runtime.bind_context)"
            )
        kwargs[TRITON_CONTEXT_FIELD_NAME] = context
        return self.__wrapped__(*args, **kwargs)
