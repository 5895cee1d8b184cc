"""The user's metrics across a build's payloads (runtime/user_metrics.py): one declaration per name on the server's
``/metrics``, and histograms only where the targeted releases serve them (python_backend r24.08)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import BuildError, ReleaseRuleWarning
from ..ir.sites import declared_at
from ..ir.spec import RepositorySpec
from ..triton import python_backend
from ..triton.releases import get_release
from ..triton.targets import Targets
from .payloads import Payload, said

__all__ = ["check_metrics"]


def check_metrics(spec: RepositorySpec, pickled: Mapping[tuple[str, int], Payload], targets: Targets) -> None:
    """Two models declaring one name differently fail the build; a histogram, for a release without them, too
    (for one target, or ``--all-containers``), else it warns naming the releases where it is inert."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    histograms: dict[str, list[str]] = {}
    for (model, _), payload in sorted(pickled.items()):
        for declaration in payload.metrics:
            name = declaration["name"]
            first, earlier = seen.setdefault(name, (model, declaration))
            if earlier != declaration:
                with declared_at(spec.site(model)):
                    raise BuildError(
                        f"models {first!r} and {model!r} declare metric {name!r} differently: {said(earlier)} and "
                        f"{said(declaration)}; one name is one family on the server's /metrics: declare it once "
                        "(a module both import) and use that object, or rename one"
                    )
            if declaration["kind"] == "histogram":
                histograms.setdefault(model, []).append(name)
    lacking = [c for c in targets.containers if not python_backend.has_histograms(c)]
    first_release = get_release(python_backend.HISTOGRAM_FROM)
    for model, names in sorted(histograms.items()) if lacking else ():
        listed = ", ".join(repr(n) for n in sorted(set(names)))
        problem = (
            f"model {model!r}: histogram(s) {listed}: the Python backend serves histograms from {first_release.label} "
            f"on (python_backend r{first_release.ngc})"
        )
        if len(targets.containers) == 1 or targets.required:
            with declared_at(spec.site(model)):
                raise BuildError(
                    f"{problem}, and the build targets {targets.span(tuple(lacking))}. Target {first_release.ngc} or "
                    "newer (--triton-release), or count with a Counter or a Gauge"
                )
        warnings.warn(f"{problem}: on {targets.span(tuple(lacking))} they are inert (the model says so when it "
                      "loads)", ReleaseRuleWarning, stacklevel=4)  # fmt: skip
