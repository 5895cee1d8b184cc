"""What a class model learns about the instance it is constructed for, inside the server."""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any


@dataclasses.dataclass(frozen=True)
class ModelContext:
    """Passed to a bound class's constructor (or factory), once per model instance.

    Weights load here, at server start, instead of being pickled with the model.
    """

    model_name: str
    model_version: int
    instance_name: str
    instance_index: int
    instance_kind: str  # "CPU" or "GPU", as Triton reports it
    device_id: int
    model_dir: str  # the version directory: model.py, model.pkl, files/
    files_dir: str

    def path(self, name: str) -> str:
        """Absolute path of a file shipped with ``files=[...]`` at build time."""
        path = os.path.join(self.files_dir, name)
        if not os.path.exists(path):
            shipped = sorted(os.listdir(self.files_dir)) if os.path.isdir(self.files_dir) else []
            raise FileNotFoundError(
                f"model '{self.model_name}' has no shipped file '{name}'; shipped: {shipped}. "
                "List it in files=[...] when binding the model"
            )
        return path


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
