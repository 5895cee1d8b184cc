"""A class model's own ``is_ready()``, answering the model's ready endpoint where the server asks it.

From python_backend r26.03 (NGC 26.03) the stub calls ``TritonPythonModel.is_ready()`` when
``/v2/models/<model>/ready`` (and, with strict readiness, ``/v2/health/ready``) is probed, but only
if the loaded model object *has* that attribute: the stub checks once, after ``initialize``, and
a model without it pays no IPC per probe. So the generated model never defines ``is_ready`` on its
class; ``initialize`` sets it on the instance when the user's object (or a fused model's step)
defines one. Older servers never ask, and ``repogen.local`` asks through :meth:`Readiness.check`.

The stub needs a ``bool`` back (a coroutine is run to one), within 5 s: the user's answer is
converted, an ``async def is_ready`` is awaited, and an exception is logged with the user's frame and
answered ``False``, so a failing check reads as "not ready" with its reason in the log.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["Readiness", "readiness_checks"]


def readiness_checks(label: str, infer_func: Any) -> list[tuple[str, Callable[[], Any]]]:
    """``(what, is_ready)`` for the user's object and, for a fused model, each step's; empty when none has one."""
    steps = getattr(infer_func, "fused_steps", None)
    if callable(steps):
        return [check for name, step in steps() for check in readiness_checks(name, step)]
    if inspect.isclass(infer_func):
        return []
    check = getattr(infer_func, "is_ready", None)
    if not callable(check):
        return []
    return [(f"{label}: {type(infer_func).__name__}.is_ready", check)]


class Readiness:
    """The ``is_ready`` a model instance exposes: every check must answer ``True``."""

    def __init__(
        self,
        checks: list[tuple[str, Callable[[], Any]]],
        log: Callable[[str], None],
        describe: Callable[[BaseException], str],
    ):
        self.checks = checks
        self.log = log
        self.describe = describe
        """``KeyError: 'x' (at app.py:12, in is_ready)``: an exception as the runtime names it."""

    def __call__(self) -> Any:
        """A bool, or a coroutine the stub runs to one when a check is ``async``."""
        pending = []
        for what, check in self.checks:
            try:
                answer = check()
            except Exception as exc:
                return self._failed(what, exc)
            if inspect.isawaitable(answer):
                pending.append((what, answer))
            elif not answer:
                return False
        if not pending:
            return True
        return self._settle(pending)

    async def _settle(self, pending: list[tuple[str, Any]]) -> bool:
        for what, answer in pending:
            try:
                if not await answer:
                    return False
            except Exception as exc:
                return self._failed(what, exc)
        return True

    def check(self) -> bool:
        """Outside the server (``repogen.local``): the same answer, coroutines run here."""
        answer = self()
        return bool(asyncio.run(answer) if inspect.iscoroutine(answer) else answer)

    def _failed(self, what: str, exc: Exception) -> bool:
        self.log(f"{what}() raised {self.describe(exc)}; answering not ready")
        return False
