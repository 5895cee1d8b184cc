"""python_backend rules that depend on the release, checked against every container a build targets.

A class model's ``is_ready`` is only asked from r26.03: a build for one older container refuses it
(the model would report ready while its check says no), a build for several warns, naming the
releases that ignore it. A Python model's BF16 inputs and outputs are only taken from r24.08: a
build for one older container, or for every one (``--all-containers``), refuses them; a build for
several warns, naming the releases whose stub would refuse each request. (The model names r25.08
refuses cannot be built: repogen's own name rule, ``repogen.ir.lower``, is stricter and says so;
``validate`` and ``deploy`` check hand-written repositories, repogen.ondisk.compatibility.)
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator

from ..errors import BuildError, ReleaseRuleWarning
from ..ir.sites import declared_at
from ..ir.spec import RepositorySpec
from ..runtime.contract import BF16
from ..triton import python_backend
from ..triton.releases import Release, get_release
from ..triton.targets import Targets

__all__ = ["ReleaseRuleWarning", "check_release_rules"]


def _readiness_owners(spec: RepositorySpec) -> Iterator[tuple[str, str]]:
    """``(model, Class.is_ready)`` for every bound class that defines ``is_ready``."""
    for model in (*spec.models, *(step for fused in spec.fused for step in fused.step_models)):
        for version in model.versions:
            for func in version.infer_funcs:
                if inspect.isclass(func) and callable(getattr(func, "is_ready", None)):
                    yield model.name, f"{func.__qualname__}.is_ready"


def _bf16_users(spec: RepositorySpec) -> Iterator[tuple[str, list[str]]]:
    """``(model, [tensor, ...])`` for every Python model (a fused ensemble included) with BF16 inputs or outputs."""
    for model in (*spec.models, *(fused.model for fused in spec.fused)):
        names = [f"input {t.name!r}" for t in model.inputs if t.data_type == BF16]
        names += [f"output {t.name!r}" for t in model.outputs if t.data_type == BF16]
        if names:
            yield model.name, names


def check_release_rules(spec: RepositorySpec, targets: Targets) -> None:
    """Refuse what a targeted release would ignore to the user's harm; warn about what some of them ignore."""
    _check_bf16(spec, targets)
    _check_is_ready(spec, targets)
    _check_async(spec, targets)


def _check_async(spec: RepositorySpec, targets: Targets) -> None:
    """One warning for the build: the async callables that some targeted releases serve one request at a time."""
    sequential: dict[str, list[Release]] = {}
    for model in spec.models:
        if model.max_concurrency:  # None: no async callable; 0: one call at a time wherever it is served
            older = [c for c in targets.containers if not python_backend.serves_async_concurrently(c, model.decoupled)]
            if older:
                sequential[model.name] = older
    if not sequential:
        return
    names = ", ".join(f"{name!r} ({_span(older)})" for name, older in sorted(sequential.items()))
    warnings.warn(
        f"async callables serve one request at a time per instance on these targeted releases: {names}; "
        f"python_backend lets a request be answered after execute returns from NGC "
        f"{python_backend.SENDER_IN_DEFAULT_MODE_FROM} ({python_backend.ASYNC_DECOUPLED_FROM} for a streaming model), "
        "where up to max_concurrency of them are in flight at once. Add instances (ModelConfig(instance_groups=...)) "
        "to serve more at once there",
        ReleaseRuleWarning,
        stacklevel=4,
    )


def _check_bf16(spec: RepositorySpec, targets: Targets) -> None:
    refusing = [c for c in targets.containers if not python_backend.has_bf16(c)]
    first = get_release(python_backend.BF16_FROM)
    for model, names in _bf16_users(spec) if refusing else ():
        problem = python_backend.bf16_refusal(f"model {model!r}", names)
        if len(targets.containers) == 1 or targets.required:
            with declared_at(spec.site(model)):
                raise BuildError(
                    f"{problem}, and the build targets {_span(refusing)}. Target {first.ngc} or newer "
                    "(--triton-release), or declare them float16 or float32"
                )
        warnings.warn(f"{problem}: {_span(refusing)} serve it without answering", ReleaseRuleWarning, stacklevel=4)


def _check_is_ready(spec: RepositorySpec, targets: Targets) -> None:
    containers = targets.containers
    first = get_release(python_backend.IS_READY_FROM)
    for model, method in sorted(set(_readiness_owners(spec))):
        ignoring = [c for c in containers if not python_backend.has_is_ready(c)]
        if not ignoring:
            continue
        if len(containers) == 1:
            raise BuildError(
                f"model {model!r}: {method} answers the model's ready endpoint only from {first.label} on "
                f"(python_backend r{first.ngc}); the targeted {ignoring[0].label} never asks it, so the model would "
                f"report ready whatever it says. Target {first.ngc} or newer (--triton-release), or drop is_ready"
            )
        warnings.warn(
            f"model {model!r}: {method} answers the model's ready endpoint from {first.label} on; "
            f"{_span(ignoring)} never ask it (the model is ready once loaded there)",
            ReleaseRuleWarning,
            stacklevel=4,
        )


def _span(releases: list[Release]) -> str:
    return f"NGC {releases[0].ngc}" if len(releases) == 1 else f"NGC {releases[0].ngc}-{releases[-1].ngc}"
