"""``Repository``: the object ``repogen build app.py:models`` compiles.

It only records what the user declared; validation and lowering happen in ``repogen.ir``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .config import ModelConfig
from .tensor import Tensor


@dataclasses.dataclass(frozen=True)
class ModelDefinition:
    """A model exactly as declared, before validation."""

    name: str
    infer_funcs: tuple[Any, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    config: ModelConfig
    strict: bool
    version: int
    files: tuple[Path, ...] = ()  # absolute paths, copied into the version directory


class ModelHandle:
    """A reference to a model of a repository, returned by ``bind`` and ``@model``."""

    def __init__(self, repository: Repository, definition: ModelDefinition):
        self.repository = repository
        self.definition = definition

    @property
    def name(self) -> str:
        return self.definition.name

    def __repr__(self) -> str:
        return f"<ModelHandle {self.name!r}>"


class Repository:
    """A set of models to compile into one Triton model repository."""

    def __init__(self) -> None:
        self._definitions: list[ModelDefinition] = []

    @property
    def definitions(self) -> tuple[ModelDefinition, ...]:
        return tuple(self._definitions)

    def bind(
        self,
        model_name: str,
        infer_func: Callable[..., Any] | Sequence[Callable[..., Any]],
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int = 1,
        config: ModelConfig | None = None,
        strict: bool = False,
        files: Sequence[str | os.PathLike[str]] = (),
    ) -> ModelHandle:
        """Add a model, with the keyword names of PyTriton's ``Triton.bind``.

        ``infer_func`` may be a list of callables: Triton then runs one instance per callable. A
        class is constructed inside the server, once per instance, with a ``ModelContext`` if its
        constructor takes an argument. ``files`` (relative to the calling module's directory) are
        shipped in the version directory, where ``context.path(name)`` finds them.
        """
        funcs = tuple(infer_func) if isinstance(infer_func, (list, tuple)) else (infer_func,)
        definition = ModelDefinition(
            name=model_name,
            infer_funcs=funcs,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            config=config if config is not None else ModelConfig(),
            strict=strict,
            version=model_version,
            files=tuple(_resolve(f) for f in files),
        )
        self._definitions.append(definition)
        return ModelHandle(self, definition)

    def model(
        self,
        model_name: str,
        *,
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int = 1,
        config: ModelConfig | None = None,
        strict: bool = False,
        files: Sequence[str | os.PathLike[str]] = (),
    ) -> Callable[[Callable[..., Any]], ModelHandle]:
        """Decorator form of :meth:`bind`; the decorated name becomes the model's handle."""
        resolved = [_resolve(f) for f in files]

        def register(func: Callable[..., Any]) -> ModelHandle:
            return self.bind(model_name, func, inputs, outputs, model_version, config, strict, resolved)

        return register


def _resolve(path: str | os.PathLike[str]) -> Path:
    """Relative paths are relative to the user's module that declared them, not to the cwd."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    frame = sys._getframe(1)
    package_dir = str(Path(__file__).resolve().parents[1])
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package_dir):
        frame = frame.f_back  # type: ignore[assignment]
    base = Path(frame.f_code.co_filename).resolve().parent if frame is not None else Path.cwd()
    return base / candidate
