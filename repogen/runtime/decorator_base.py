"""What every PyTriton-style decorator shares: the decorator object, and the plumbing of its calls.

Each decorator returns a small callable object (a :class:`Decorated`) rather than a closure: the
object pickles by reference to this (vendored) package, only the user's function travels by
value, and binding to an instance works so that decorated methods of class models behave like
PyTriton's. The helpers below split a call's arguments, size requests and batches, and apply a
step after the wrapped callable returns whether it returned a value, a generator (streaming), an
async generator or an awaitable.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from .context import TritonContext, TritonModelConfig, find_context
from .errors import InferenceError

TRITON_CONTEXT_FIELD_NAME = "triton_context"  # the keyword @triton_context passes (PyTriton's name)
# Keywords that travel beside the input arrays and are never treated as tensors.
SPECIAL_KEYS = frozenset({"__triton_context__", TRITON_CONTEXT_FIELD_NAME})
# functools' list differs per Python (3.12 added __type_params__), and these objects are pickled:
# the same names on every Python keep a payload the same whichever Python built it.
WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__")


class Decorated:
    """Base for decorator objects: forwards attributes and binds like a function."""

    def __init__(self, func: Callable[..., Any]):
        # A class's or another decorator's __dict__ is not metadata: copy names only.
        updated = () if isinstance(func, (type, Decorated)) else functools.WRAPPER_UPDATES
        functools.update_wrapper(self, func, assigned=WRAPPER_ASSIGNMENTS, updated=updated)
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


# -- arguments ------------------------------------------------------------------------------------


def split_requests(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Sequence[Any]]:
    """The request list is the last positional argument; anything before it is ``self``."""
    if not args:
        raise InferenceError("decorated infer_func called without the list of requests")
    return args[:-1], args[-1]


def request_size(request: Any) -> int:
    for value in request.values():
        return int(value.shape[0]) if np.ndim(value) else 1
    return 0


def split_kwargs(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Input arrays apart from the context keywords that travel with them."""
    inputs = {k: v for k, v in kwargs.items() if k not in SPECIAL_KEYS}
    return inputs, {k: v for k, v in kwargs.items() if k in SPECIAL_KEYS}


def leading(value: Any) -> int | None:
    shape = np.shape(value) if isinstance(value, (np.ndarray, list, tuple)) else getattr(value, "shape", None)
    return int(shape[0]) if shape else None


# -- results --------------------------------------------------------------------------------------


def then(result: Any, post: Callable[[Any], Any]) -> Any:
    """Apply ``post`` to a result, to each step of a (async) generator (streaming), or once awaited."""
    if type(result) is dict:  # the common case; three inspect.is* calls cost ~1.5 µs per call
        return post(result)
    if inspect.isgenerator(result):
        return _steps(result, post)
    if inspect.isasyncgen(result):
        return _async_steps(result, post)
    if inspect.isawaitable(result):
        return _await_then(result, post)
    return post(result)


def _steps(result: Any, post: Callable[[Any], Any]) -> Any:
    """Each step, ``post``-ed; closing this closes ``result`` at once (a cancelled stream runs its finally:)."""
    try:
        for item in result:
            yield post(item)
    finally:
        result.close()


async def _async_steps(result: Any, post: Callable[[Any], Any]) -> Any:
    try:
        async for item in result:
            yield post(item)
    finally:
        await result.aclose()  # an async generator left to the garbage collector would close only later


async def _await_then(result: Any, post: Callable[[Any], Any]) -> Any:
    return post(await result)


def gather(results: list[Any], post: Callable[[list[Any]], Any]) -> Any:
    """Combine the results of several calls of the wrapped callable, awaiting them if async."""
    if any(inspect.isawaitable(r) for r in results):
        return _await_all(results, post)
    return post(results)


async def _await_all(results: list[Any], post: Callable[[list[Any]], Any]) -> Any:
    return post([await r if inspect.isawaitable(r) else r for r in results])


def check_outputs(outputs: Any, decorator: str) -> Any:
    if isinstance(outputs, (dict, list, tuple)):
        return outputs
    bad_outputs(outputs, decorator)


def bad_outputs(outputs: Any, decorator: str) -> NoReturn:
    raise InferenceError(
        f"a {decorator} function must return a dict of output arrays (or a list/tuple in the declared "
        f"output order); it returned {type(outputs).__name__}"
    )
