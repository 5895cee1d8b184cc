"""The "request" decorators: ``@sample``, ``@batch``, ``@group_by_keys`` and ``@fill_optionals``.

They receive the list of requests as the last positional argument (anything before it is
``self``), as PyTriton's do, and decide how the wrapped callable sees them: one call per request
(``sample``), one merged batch of keyword arrays (``batch``), one call per set of requests with
the same inputs (``group_by_keys``), or requests with their optional inputs filled in
(``fill_optionals``).
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .context import TritonModelConfig
from .decorator_base import (
    Decorated,
    bad_outputs,
    check_outputs,
    gather,
    leading,
    request_size,
    split_requests,
    then,
)
from .errors import InferenceError
from .tensors import concatenate, like, row_range

# -- @sample --------------------------------------------------------------------------------------


class sample(Decorated):  # noqa: N801 - PyTriton's public name
    """Call the function with each request's inputs as keyword arrays (for non-batching models).

    PyTriton passes the first request only, since a model without batching receives one request
    per call; here every request is handled in turn, which is the same for that case.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = split_requests(args)
        results = [self.__wrapped__(*head, **kwargs, **request) for request in requests]
        if len(results) == 1:
            return then(results[0], lambda outputs: [check_outputs(outputs, "@sample")])
        return gather(results, lambda done: [check_outputs(r, "@sample") for r in done])


# -- @batch ---------------------------------------------------------------------------------------


class batch(Decorated):  # noqa: N801 - PyTriton's public name
    """Gather a list of requests into one batch of keyword arrays and split the outputs back.

    The callable receives each input as one array whose first axis is the concatenation of every
    request's batch, and returns a dict (or a list/tuple in the declared output order) of arrays
    with exactly that first axis: one row more or less would hand some client another request's
    row, so it fails every request of the batch, naming the output (``@pad_batch`` below drops
    its own padding first).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = split_requests(args)
        first = requests[0]
        if len(requests) == 1:  # the hot path: nothing to merge, usually nothing to split
            outputs = self.__wrapped__(*head, **kwargs, **first)
            rows = request_size(first)
            if type(outputs) is dict and all(
                type(v) is np.ndarray and v.ndim and v.shape[0] == rows for v in outputs.values()
            ):
                return [outputs]
            return then(outputs, lambda result: split_outputs(result, [rows], self._model_name(head)))
        names = first.keys()
        for other in requests[1:]:
            if other.keys() != names:
                raise InferenceError(
                    f"@batch cannot merge requests with different inputs: {sorted(names)} vs "
                    f"{sorted(other.keys())}; mark optional inputs and use @fill_optionals or "
                    "@group_by_keys, or bind without @batch"
                )
        inputs = {name: concatenate([r[name] for r in requests]) for name in names}
        outputs = self.__wrapped__(*head, **kwargs, **inputs)
        sizes = [request_size(r) for r in requests]
        return then(outputs, lambda result: split_outputs(result, sizes, self._model_name(head)))

    def _model_name(self, head: tuple[Any, ...]) -> str | None:
        context = self._context(head)
        return context.model_name if context is not None else None


def split_outputs(outputs: Any, sizes: list[int], model: str | None = None) -> list[Any]:
    """Cut batched outputs into one result per request, keeping dict or sequence form."""
    if isinstance(outputs, dict):
        items = list(outputs.items())
    elif isinstance(outputs, (list, tuple)):
        items = list(enumerate(outputs))
    else:
        bad_outputs(outputs, "@batch")
    total = sum(sizes)
    if len(sizes) == 1 and all(type(v) is np.ndarray and v.ndim and v.shape[0] == total for _, v in items):
        return [outputs]  # the common single-request case: no slicing, no copies, nothing to re-check
    _check_batch_sizes(items, total, sizes, model)
    results: list[Any] = []
    start = 0
    for size in sizes:
        end = start + size
        cut = [(name, row_range(value, start, end)) for name, value in items]
        results.append(dict(cut) if isinstance(outputs, dict) else tuple(value for _, value in cut))
        start = end
    return results


def _check_batch_sizes(items: list[tuple[Any, Any]], total: int, sizes: list[int], model: str | None) -> None:
    for name, value in items:
        rows = leading(value)
        if rows != total:
            found = "no batch axis" if rows is None else f"{rows} rows"
            where = f"model '{model}' " if model else ""
            raise InferenceError(
                f"@batch: {where}output {name!r} has {found}, expected {total} (one per input row: the "
                f"requests' batch sizes {sizes} concatenated); return exactly one output row per input row"
            )


# -- @group_by_keys -------------------------------------------------------------------------------


class group_by_keys(Decorated):  # noqa: N801 - PyTriton's public name
    """Call the function once per set of requests that share the same input names.

    Put it above ``@batch`` when some inputs are optional: ``@batch`` can only stack requests that
    carry the same inputs. Results come back in the original request order.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = split_requests(args)
        order = sorted(range(len(requests)), key=lambda i: sorted(requests[i].keys()))
        groups = [list(g) for _, g in itertools.groupby(order, key=lambda i: sorted(requests[i].keys()))]
        results = [self.__wrapped__(*head, [requests[i] for i in group], **kwargs) for group in groups]
        return gather(results, lambda done: _ungroup(groups, done, len(requests)))


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


class _FillOptionals(Decorated):
    def __init__(self, func: Callable[..., Any], defaults: dict[str, np.ndarray]):
        super().__init__(func)
        self.defaults = defaults
        self._checked: object = None  # the config the defaults were last validated against

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        head, requests = split_requests(args)
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
        rows = request_size(request) if request else 1
        present = next(iter(request.values()), None)  # a framework's tensor where the model takes those
        for name in missing:
            value = self.defaults[name]
            value = np.tile(value, (rows,) + (1,) * value.ndim) if batching else value
            request[name] = like(value, present)

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


def specializable(infer: Any) -> Any:
    """The function under ``@batch`` that a specialized ``execute`` may call directly, else None.

    ``@batch`` right above a plain synchronous function, or above a class model's ``__call__`` (for an
    instance, the method bound to it; for the class itself, at build time, the function). Anything else
    (a factory, further decorators, async or generator functions) keeps the general path, which handles it.
    """
    if type(infer) is batch:
        return _plain(infer.__wrapped__)
    method = getattr(infer if inspect.isclass(infer) else type(infer), "__call__", None)  # noqa: B004 - the class attribute
    if type(method) is not batch:
        return None
    inner = _plain(method.__wrapped__)
    if inner is None or inspect.isclass(infer):
        return inner
    return inner.__get__(infer, type(infer))  # called as @batch calls it: with the instance first


def _plain(inner: Any) -> Any:
    if not inspect.isfunction(inner):
        return None
    if inspect.iscoroutinefunction(inner) or inspect.isgeneratorfunction(inner) or inspect.isasyncgenfunction(inner):
        return None
    return inner
