"""Constructing class models and factories inside the server, once per model instance."""

from __future__ import annotations

import inspect
from typing import Any

from .context import TritonContext

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
