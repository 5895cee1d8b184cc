"""Models the chosen server has no backend for: named before it starts, and left out of what it loads.

The embedded tritonserver (PyPI's nvidia-pytriton wheel) has the Python backend only. A repository
holding native-backend models (``models.onnx``'s default ``backend: "onnxruntime"``, a hand-written
TensorRT model) would fail each of them at load with Triton's "unable to find backend library", and
``serve`` would stop. Instead it says which models and why, and serves the rest under explicit model
control. A server the user names (``--tritonserver``) has backends of its own that repogen cannot
list: Triton itself reports those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ...errors import ServeError
from ...ondisk.reader import ModelDir, model_dirs
from .serve_options import explicit_arguments, without_model_control
from .server_process import ServerProcess

# A config may name its backend through ``platform`` only (Triton maps these to backends).
PLATFORM_BACKENDS = {
    "onnxruntime_onnx": "onnxruntime",
    "tensorrt_plan": "tensorrt",
    "pytorch_libtorch": "pytorch",
    "tensorflow_savedmodel": "tensorflow",
    "tensorflow_graphdef": "tensorflow",
}


def required_backend(model: ModelDir) -> str | None:
    """The backend a model loads with (None: an ensemble, or a config that names none)."""
    if model.config is None or model.is_ensemble:
        return None
    return model.config.backend or PLATFORM_BACKENDS.get(model.config.platform) or None


def unservable(server: ServerProcess, repository: Path, names: Sequence[str] | None) -> dict[str, str]:
    """Model → why ``server`` cannot load it, among ``names`` (None: every model).

    The reason is ``backend 'X'`` for a model whose backend the server lacks, and ``step 'M'`` for
    an ensemble with such a model among its steps (Triton would fail the ensemble too).
    """
    have = server.backends()
    if have is None:
        return {}
    models = model_dirs(repository)
    missing = {}
    for model in models:
        backend = required_backend(model)
        if backend and backend not in have:
            missing[model.name] = f"backend '{backend}'"
    changed = True
    while changed:  # ensembles of ensembles: until no more are found
        changed = False
        for model in models:
            if model.is_ensemble and model.name not in missing and model.config is not None:
                step = next(
                    (s.model_name for s in model.config.ensemble_scheduling.step if s.model_name in missing), None
                )
                if step is not None:
                    missing[model.name] = f"step '{step}'"
                    changed = True
    return {name: why for name, why in missing.items() if names is None or name in names}


def serve_without(
    server: ServerProcess,
    repository: Path,
    skipped: dict[str, str],
    names: Sequence[str] | None,
    version: str,
    echo: Callable[[str], None],
) -> list[str]:
    """Say what is left out and why; load the rest explicitly (set on ``server`` before it starts); return them."""
    have = server.backends() or ()
    by_reason: dict[str, list[str]] = {}
    for name, reason in sorted(skipped.items()):
        by_reason.setdefault(reason, []).append(name)
    reasons = "; ".join(
        f"{', '.join(models)} need{'s' if len(models) == 1 else ''} {reason}"
        for reason, models in sorted(by_reason.items())
    )
    why = (
        f"{reasons}, and this tritonserver ({version}, embedded) has only the backends {', '.join(have)}. Serve "
        "them on a server with those backends (an NGC tritonserver container, or --tritonserver PATH), or build "
        'ONNX models with models.onnx(..., backend="python") to serve them here'
    )
    every = names if names is not None else [m.name for m in model_dirs(repository) if m.has_config]
    rest = [name for name in every if name not in skipped]
    if not rest:
        raise ServeError(f"no model of {repository} can be served here: {why}.")
    echo(f"Not serving {len(skipped)} model(s): {why}. Serving the other {len(rest)} under explicit model control.")
    server.extra_args = (*without_model_control(server.extra_args), *explicit_arguments(rest))
    return rest
