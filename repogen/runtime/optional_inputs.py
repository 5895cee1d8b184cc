"""The "request" decorators for models with optional inputs: ``@group_by_keys`` and ``@fill_optionals``.

As ``@batch`` (request_decorators.py) they receive the list of requests as the last positional argument,
as PyTriton's do: one call per set of requests with the same inputs (``group_by_keys``), or requests with
their optional inputs filled in (``fill_optionals``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .context import TritonModelConfig
from .decorator_base import Decorated, gather, request_size, split_requests
from .errors import InferenceError
from .tensors import framework_of

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


def like(array: np.ndarray, other: Any) -> Any:
    """A numpy array as the same kind of tensor as ``other``, on its device (a default beside a request's inputs)."""
    if type(other) is np.ndarray or other is None or array.dtype == object:
        return array
    framework = framework_of(other)
    return array if framework is None else framework.like(array, other)
