"""Constructing class models and factories inside the server, once per model instance, and what outlives one."""

from __future__ import annotations

import concurrent.futures.thread
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from .context import TritonContext, bind_context

# The context a class model's constructor receives is the one ``@triton_context`` injects.
ModelContext = TritonContext


class factory:  # noqa: N801 - used as a decorator
    """Marks a function that builds the callable inside the server: ``factory(context) -> callable``."""

    def __init__(self, build: Any):
        self.build = build

    def __call__(self, context: ModelContext) -> Any:
        return self.build(context)


def instantiate(target: Any, context: ModelContext) -> Any:
    """Construct a class or run a factory for this instance; plain callables pass through."""
    if isinstance(target, factory):
        return target(context)
    if not inspect.isclass(target):
        return target
    try:
        parameters = [
            p
            for p in inspect.signature(target).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        parameters = []
    constructor: Any = target
    instance = constructor(context) if parameters else constructor()
    if not callable(instance):
        raise TypeError(
            f"model '{context.model_name}': {target.__name__} instances are not callable; define "
            "__call__(self, requests) (decorators such as @batch apply to it)"
        )
    return instance


def made_callable(
    model: str, funcs: list[Any], context: TritonContext, imports: Any, log: Callable[[str], None],
    describe: Callable[[BaseException], str],
) -> tuple[Any, Any]:  # fmt: skip
    """This instance's callable (one of ``infer_func=[...]``, a class or a factory's made here), and what answers its
    model's ready endpoint (its ``is_ready``: runtime/readiness.py; None: ready once loaded). A GPU instance's
    frameworks are pointed at its GPU first; ``imports``: the modules the build recorded the payload importing."""
    if context.device.startswith("cuda"):  # runtime/devices.py ships with every model that has GPU instances
        from .devices import use_device

        use_device(context.device, imports or ())
    target = funcs[context.instance_index % len(funcs)]
    bind_context(target, context)  # before construction: a @triton_context class reads it in __init__
    made = instantiate(target, context)
    if not hasattr(made, "is_ready") and not hasattr(made, "fused_steps"):  # readiness.py ships only then
        return made, None
    from .readiness import Readiness, readiness_checks

    checks = readiness_checks(model, made)
    return made, Readiness(checks, log, describe) if checks else None


def is_async(target: Any) -> bool:
    """Whether calling ``target`` starts a coroutine or an async generator: an ``async def`` function or method, a
    class (or its instance) whose ``__call__`` is one, under any of the runtime's decorators (``__wrapped__``)."""
    for _ in range(32):
        if isinstance(target, functools.partial):
            target = target.func
            continue
        if inspect.isclass(target) or (not inspect.isroutine(target) and not hasattr(target, "__wrapped__")):
            target = getattr(target if inspect.isclass(target) else type(target), "__call__", None)  # noqa: B004
        target = getattr(target, "__func__", target)  # a bound method
        if inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target):
            return True
        target = getattr(target, "__wrapped__", None)
        if target is None:
            return False
    return False


def lingering_threads() -> list[threading.Thread]:
    """Threads that keep this instance's process from exiting once its model is finalized: the interpreter waits
    for every thread that is not a daemon (an idle executor's workers end when it shuts the executors down)."""
    here = (threading.main_thread(), threading.current_thread())
    return [
        t for t in threading.enumerate()
        if t not in here and t.is_alive() and not t.daemon
        and getattr(t, "_target", None) is not concurrent.futures.thread._worker
    ]  # fmt: skip


def lingering_message(model: str, threads: list[threading.Thread]) -> str:
    """Why unloading ``model`` (stopping the server) waits: said as the model is finalized, before the wait."""
    names = ", ".join(repr(t.name) for t in threads)
    one = len(threads) == 1
    return (
        f"model '{model}': thread{'' if one else 's'} {names} {'is' if one else 'are'} still running after the model's "
        f"finalize and {'is not a daemon' if one else 'are not daemons'}: this instance's process cannot exit until "
        f"{'it ends' if one else 'they end'}, so unloading the model, and stopping the server, waits for "
        f"{'it' if one else 'them'} (up to tritonserver's --exit-timeout-secs). End {'it' if one else 'them'} in a "
        "finalize() method of the class bound as the model (it runs when the model unloads), or start "
        f"{'it' if one else 'them'} with daemon=True"
    )
