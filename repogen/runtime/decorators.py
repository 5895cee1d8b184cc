"""PyTriton's decorators, with its semantics, for callables served by the runtime.

Each decorator returns a small callable object rather than a closure: the object pickles by
reference to this (vendored) module, only the user's function travels by value, and binding to
an instance works so that decorated methods of class models behave like PyTriton's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import InferenceError


class _Decorated:
    """Base for decorator objects: forwards attributes and binds like a function."""

    def __init__(self, func: Callable[..., Any]):
        self.__wrapped__ = func
        functools.update_wrapper(self, func)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def _split_requests(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Sequence[Any]]:
    """The request list is the last positional argument; anything before it is ``self``."""
    if not args:
        raise InferenceError("decorated infer_func called without the list of requests")
    return args[:-1], args[-1]


def _request_size(request: Any) -> int:
    for value in request.values():
        return int(value.shape[0]) if value.ndim else 1
    return 0


class batch(_Decorated):  # noqa: N801 - PyTriton's public name
    """Gather a list of requests into one batch of keyword arrays and split the outputs back.

    The callable receives each input as one array whose first axis is the concatenation of every
    request's batch, and returns a dict (or a list/tuple in the declared output order) of arrays
    with the same first axis.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        head, requests = _split_requests(args)
        first = requests[0]
        names = first.keys()
        for other in requests[1:]:
            if other.keys() != names:
                raise InferenceError(
                    f"@batch cannot merge requests with different inputs: {sorted(names)} vs "
                    f"{sorted(other.keys())}; mark optional inputs and use @fill_optionals, or bind "
                    "without @batch"
                )
        if len(requests) == 1:
            inputs = dict(first)
        else:
            inputs = {name: np.concatenate([r[name] for r in requests]) for name in names}
        outputs = self.__wrapped__(*head, **kwargs, **inputs)
        return _split_outputs(outputs, [_request_size(r) for r in requests])


def _split_outputs(outputs: Any, sizes: list[int]) -> list[Any]:
    """Cut batched outputs into one result per request, keeping dict or sequence form."""
    if len(sizes) == 1:
        return [outputs]
    if isinstance(outputs, dict):
        items = list(outputs.items())
        results: list[Any] = []
        start = 0
        for size in sizes:
            end = start + size
            results.append({name: value[start:end] for name, value in items})
            start = end
        return results
    if isinstance(outputs, (list, tuple)):
        results = []
        start = 0
        for size in sizes:
            end = start + size
            results.append(tuple(value[start:end] for value in outputs))
            start = end
        return results
    raise InferenceError(
        f"a @batch function must return a dict of output arrays (or a list/tuple in the declared "
        f"output order); it returned {type(outputs).__name__}"
    )
