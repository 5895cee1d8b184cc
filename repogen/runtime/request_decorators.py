"""The "request" decorators ``@sample`` and ``@batch`` (``@group_by_keys`` and ``@fill_optionals``, for optional
inputs, are in optional_inputs.py: a model carries them only where its payload uses them).

They receive the list of requests as the last positional argument (anything before it is
``self``), as PyTriton's do, and decide how the wrapped callable sees them: one call per request
(``sample``), or one merged batch of keyword arrays (``batch``).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

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
from .tensors import concatenate, row_range

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
