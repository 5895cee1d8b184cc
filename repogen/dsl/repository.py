"""``Repository``: the object ``repogen build app.py:models`` compiles.

It only records what the user declared; validation and lowering happen in ``repogen.ir``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import runners
from .config import ModelConfig, ServerOptions
from .handle import ModelHandle
from .site import Site, caller_site, user_frame
from .tensor import Tensor


@dataclasses.dataclass(frozen=True)
class EnsembleDefinition:
    """An ensemble as declared: ``func`` is traced at build time into Triton's ensemble steps."""

    name: str
    func: Callable[..., Any]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    config: ModelConfig
    fuse: bool = False
    site: Site | None = dataclasses.field(default=None, compare=False)  # the @ensemble line


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
    site: Site | None = dataclasses.field(default=None, compare=False)  # the bind or @model line


#: What ``models.onnx(..., backend=...)`` accepts: Triton's own onnxruntime backend, or the Python backend
#: running the graph through onnxruntime shipped inside the repository (servers without that backend).
ONNX_BACKENDS = ("onnxruntime", "python")


@dataclasses.dataclass(frozen=True)
class NetworkDefinition:
    """An exported network as declared: ``kind`` "onnx" (tensors read from the graph when not declared),
    "torchscript" or "tensorrt" (files repogen does not read: tensors declared)."""

    name: str
    path: Path  # absolute
    inputs: tuple[Tensor, ...] | None
    outputs: tuple[Tensor, ...] | None
    config: ModelConfig
    version: int
    backend: str  # models.onnx's backend=; "" for the other kinds
    kind: str = "onnx"
    site: Site | None = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True)
class IncludedDefinition:
    """An existing Triton model directory, taken into the repository as it is (``models.include``)."""

    name: str
    path: Path  # absolute
    site: Site | None = dataclasses.field(default=None, compare=False)


class Repository:
    """A set of models to compile into one Triton model repository.

    ``server_options`` (:class:`ServerOptions`): what the server must be started with beyond what the models'
    configs say (the response cache's size, the rate limiter's resource counts); the build records it.
    """

    def __init__(self, server_options: ServerOptions | None = None) -> None:
        self.server_options = server_options
        self.site: Site | None = caller_site() if server_options is not None else None
        """Where ``server_options`` was given, for the errors its lowering raises."""
        self._definitions: list[ModelDefinition] = []
        self._ensembles: list[EnsembleDefinition] = []
        self._networks: list[NetworkDefinition] = []
        self._included: list[IncludedDefinition] = []
        self._generation = 0  # declarations so far, of every kind: local() runs a fresh lowering after any
        self._local: tuple[int, Any] | None = None

    @property
    def definitions(self) -> tuple[ModelDefinition, ...]:
        return tuple(self._definitions)

    @property
    def ensembles(self) -> tuple[EnsembleDefinition, ...]:
        return tuple(self._ensembles)

    @property
    def networks(self) -> tuple[NetworkDefinition, ...]:
        """Exported networks (``onnx``, ``torchscript``, ``tensorrt``), served by a backend rather than a callable."""
        return tuple(self._networks)

    def onnx(
        self,
        model_name: str,
        path: str | os.PathLike[str],
        *,
        inputs: Sequence[Tensor] | None = None,
        outputs: Sequence[Tensor] | None = None,
        model_version: int = 1,
        config: ModelConfig | None = None,
        backend: str = "onnxruntime",
    ) -> ModelHandle:
        """Add an exported ONNX network: ``<model_name>/<model_version>/model.onnx``.

        ``inputs``/``outputs`` default to the graph's (symbolic dims become -1; with
        ``max_batch_size > 0`` the leading dim, which must be symbolic, is the batch axis and is left
        out, as in ``bind``). Declared ones must agree with the graph; the build says where they do
        not. ``backend="onnxruntime"`` is Triton's onnxruntime backend; ``backend="python"`` runs the
        same graph on the Python backend through onnxruntime, which the build ships inside the
        repository (for a server that has only the Python backend). ``path`` is relative to the
        declaring module; the build reads it with protobuf alone (no ``onnx`` package needed).
        """
        definition = NetworkDefinition(
            name=model_name,
            path=_resolve(path),
            inputs=None if inputs is None else tuple(inputs),
            outputs=None if outputs is None else tuple(outputs),
            config=config if config is not None else ModelConfig(),
            version=model_version,
            backend=backend,
            site=caller_site(),
        )
        self._networks.append(definition)
        self._generation += 1
        return ModelHandle(self, definition)  # type: ignore[arg-type]

    @property
    def included(self) -> tuple[IncludedDefinition, ...]:
        """Model directories taken in as they are (``include``)."""
        return tuple(self._included)

    def include(self, model_name: str, path: str | os.PathLike[str]) -> ModelHandle:
        """Take an existing Triton model directory (``config.pbtxt`` and version directories: a hand-written
        Python-backend model, a Model Navigator output, an ONNX model with its config) into the repository as
        it is, under ``model_name``. Its files are copied and hashed into the manifest; its config is parsed
        with repogen's schema, and a field the targeted release would refuse fails the build, named. The
        handle is an ensemble step and a BLS target like any model's (tensors as its config declares them).
        """
        definition = IncludedDefinition(name=model_name, path=_resolve(path), site=caller_site())
        self._included.append(definition)
        self._generation += 1
        return ModelHandle(self, definition)  # type: ignore[arg-type]

    def torchscript(
        self,
        model_name: str,
        path: str | os.PathLike[str],
        *,
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int = 1,
        config: ModelConfig | None = None,
    ) -> ModelHandle:
        """Add a TorchScript module (``torch.jit.save``): ``<model_name>/<model_version>/model.pt``,
        ``platform: "pytorch_libtorch"``. The file is not read, so the tensors are declared; an unnamed
        Tensor takes Triton's name for its position (``INPUT__0``, ``OUTPUT__0``, ...)."""
        return self._declared("torchscript", model_name, path, inputs, outputs, model_version, config)

    def tensorrt(
        self,
        model_name: str,
        path: str | os.PathLike[str],
        *,
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int = 1,
        config: ModelConfig | None = None,
    ) -> ModelHandle:
        """Add a TensorRT plan (a serialized engine): ``<model_name>/<model_version>/model.plan``,
        ``platform: "tensorrt_plan"``. The plan is not read: declare every tensor with its binding's name."""
        return self._declared("tensorrt", model_name, path, inputs, outputs, model_version, config)

    def _declared(
        self,
        kind: str,
        model_name: str,
        path: str | os.PathLike[str],
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int,
        config: ModelConfig | None,
    ) -> ModelHandle:
        definition = NetworkDefinition(
            name=model_name,
            path=_resolve(path),
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            config=config if config is not None else ModelConfig(),
            version=model_version,
            backend="",
            kind=kind,
            site=caller_site(),
        )
        self._networks.append(definition)
        self._generation += 1
        return ModelHandle(self, definition)  # type: ignore[arg-type]

    def ensemble(
        self,
        name: str,
        *,
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        config: ModelConfig | None = None,
        fuse: bool = False,
    ) -> Callable[[Callable[..., Any]], ModelHandle]:
        """Decorator: the function's body, calling model handles, becomes an ensemble.

        The body receives each input as a keyword argument, calls handles with keyword tensors,
        indexes their outputs by name and returns a dict of the ensemble's outputs. It runs once,
        at build time, on placeholders; Triton runs the recorded steps. With ``fuse=True`` the steps
        run in one Python model instead (no server round trip per step; ``config`` then schedules
        that model); the composing models stay in the repository.
        """

        site = caller_site()

        def register(func: Callable[..., Any]) -> ModelHandle:
            definition = EnsembleDefinition(
                name=name,
                func=func,
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                config=config if config is not None else ModelConfig(),
                fuse=bool(fuse),
                site=site,
            )
            self._ensembles.append(definition)
            self._generation += 1
            return ModelHandle(self, definition)

        return register

    def local(self) -> Any:
        """Run this repository's models, ensembles and BLS pipelines in this process (no server).

        The same object is returned until models are added, so class models keep their state.
        """
        run = runners.local_runner()
        if self._local is None or self._local[0] != self._generation:
            self._local = (self._generation, run(self))
        return self._local[1]

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
        return self._bind(caller_site(), model_name, infer_func, inputs, outputs, model_version, config, strict, files)

    def _bind(
        self,
        site: Site | None,
        model_name: str,
        infer_func: Callable[..., Any] | Sequence[Callable[..., Any]],
        inputs: Sequence[Tensor],
        outputs: Sequence[Tensor],
        model_version: int,
        config: ModelConfig | None,
        strict: bool,
        files: Sequence[str | os.PathLike[str]],
    ) -> ModelHandle:
        self._before_bind(model_name, model_version)
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
            site=site,
        )
        self._definitions.append(definition)
        self._generation += 1
        return ModelHandle(self, definition)

    def _before_bind(self, model_name: str, model_version: int) -> None:
        """Where a subclass has its say before a model is added (:class:`~repogen.dsl.pytriton.Triton`'s, after a
        stop); nothing here: two bindings of one name and version are refused by the build, naming both."""

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
        site = caller_site()

        def register(func: Callable[..., Any]) -> ModelHandle:
            return self._bind(site, model_name, func, inputs, outputs, model_version, config, strict, resolved)

        return register


def _resolve(path: str | os.PathLike[str]) -> Path:
    """Relative paths are relative to the user's module that declared them, not to the cwd."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    frame = user_frame()
    base = Path(frame.f_code.co_filename).resolve().parent if frame is not None else Path.cwd()
    return base / candidate
