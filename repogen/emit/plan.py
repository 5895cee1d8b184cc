"""Before anything is emitted: every payload pickled once, and the containers its packages reach.

What a payload imports is known once it is pickled; resolving those distributions for each targeted
container Python (``repogen.packages``) says which containers they reach. A default build leaves the
others out (``Targets.without``; ``repogen.build`` warns, naming them and why); a build that names its
container, or requires every one, fails with the resolver's message. Leaving containers out changes the
(Python, machine) trees the packages are made for, so every payload's packages are resolved again for
the containers left (the packager keeps each tree it made: nothing is fetched twice), while its pickle,
made and checked against more containers, holds for fewer. The emitter then writes the files of the plan
for the targets it settled. Once every payload is pickled, the objects several models hold are found
(``pickling/shared_objects.py``): each model gets its own copy in the server, which ``repogen.build`` warns about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import UnreachableContainersError
from ..ir.sites import declared_at
from ..ir.spec import RepositorySpec
from ..pickling.shared_objects import find_shared, refuse_shared_thread
from ..triton.targets import Targets
from .fused_model import fused_unit
from .metric_rules import check_metrics
from .model_files import model_units
from .payloads import LeftOut, LiveObjectError, Payload, PayloadPlan, Payloads, PayloadUnit, pickle_payload
from .release_rules import check_release_rules

if TYPE_CHECKING:
    from ..packages import Packager, ShippedTree

# Called as each model is emitted: (models done, models in all, the model's name).
Progress = Callable[[int, int, str], None]

Key = tuple[str, int]


def emission_order(spec: RepositorySpec) -> list[str]:
    """The models in the order they are emitted, one progress line each: models, ensembles, networks, included."""
    return [
        *(m.name for m in spec.models),
        *(e.name for e in spec.ensembles),
        *(n.name for n in spec.networks),
        *(i.name for i in spec.included),
    ]


def plan_payloads(
    spec: RepositorySpec,
    roots: Sequence[str] = (),
    targets: Targets | None = None,
    packager: Packager | None = None,
    progress: Progress | None = None,
) -> PayloadPlan:
    """Pickle every payload of ``spec`` once and settle the containers its packages reach.

    ``targets`` (every NGC container from 23.10 unless ``--triton-release`` names one) decides what the
    shipped sources and imports are checked against; ``packager`` (None: record requirements only) ships
    what payloads import. ``progress`` hears of each model and ensemble as it is planned (pickling dominates).
    """
    payloads = Payloads.create(targets, roots)
    check_release_rules(spec, payloads.targets)
    groups = _groups(spec)
    pickled: dict[Key, Payload] = {}
    left_out: list[LeftOut] = []
    report = _reporter(progress, len(emission_order(spec)))
    while True:
        try:
            packages = _ship(spec, groups, payloads, packager, pickled, report)
            check_metrics(spec, pickled, payloads.targets)
            shared = find_shared(groups, {key: p.held for key, p in pickled.items()}, _fused_steps(spec))
            return PayloadPlan(payloads, pickled, packages, packager, tuple(left_out), shared)
        except UnreachableContainersError as exc:
            left = _narrowed(payloads.targets, exc)
            left_out.append(LeftOut(payloads.targets.span(exc.containers), exc.reason, left.span()))
            payloads.targets = left
            check_release_rules(spec, left)  # what the containers left treat differently
            assert packager is not None  # only shipping packages leaves containers out
            packager = packager.narrowed(left)


def _groups(spec: RepositorySpec) -> list[tuple[str, list[PayloadUnit]]]:
    """What each model and ensemble pickles, in emission order (an ensemble Triton schedules: nothing)."""
    groups = [(model.name, model_units(model)) for model in spec.models]
    for ensemble in spec.ensembles:
        fused = spec.fused_spec(ensemble.name)
        groups.append((ensemble.name, [fused_unit(fused)] if fused is not None else []))
    return groups


def _ship(
    spec: RepositorySpec,
    groups: list[tuple[str, list[PayloadUnit]]],
    payloads: Payloads,
    packager: Packager | None,
    pickled: dict[Key, Payload],
    report: Callable[[str], None],
) -> dict[Key, dict[str, ShippedTree]]:
    """The package trees of every payload, for the targets of the moment; a payload not pickled yet is now."""
    packages: dict[Key, dict[str, ShippedTree]] = {}
    for name, units in groups:
        with declared_at(spec.site(name)):  # a failure (pickling, packages) names where the model was declared
            for unit in units:
                if unit.key not in pickled:
                    try:
                        pickled[unit.key] = pickle_payload(unit, payloads)
                    except LiveObjectError as exc:  # a thread: other models holding it too is the story to tell
                        refuse_shared_thread(exc.culprit, name, groups)
                        raise
                if packager is not None:
                    packages[unit.key] = packager.ship(unit.what, pickled[unit.key].requirements)
        report(name)
    return packages


def _fused_steps(spec: RepositorySpec) -> dict[str, list[str]]:
    """Each fused ensemble's step models, whose objects its payload holds copies of by design."""
    fused = {ensemble.name: spec.fused_spec(ensemble.name) for ensemble in spec.ensembles}
    return {name: [step.name for step in f.step_models] for name, f in fused.items() if f is not None}


def _narrowed(targets: Targets, exc: UnreachableContainersError) -> Targets:
    """``targets`` less the containers ``exc`` says the packages cannot reach; else ``exc`` itself.

    A default build serves what its packages reach (numpy, scipy and scikit-learn dropped Python 3.10
    in 2025: today's packages reach only the 3.12 containers); naming a container (--triton-release)
    or requiring every one (--all-containers) keeps the error.
    """
    left = targets.without(exc.containers) if targets.may_narrow and exc.containers else None
    if left is None:
        raise exc
    return left


def _reporter(progress: Progress | None, total: int) -> Callable[[str], None]:
    """Tells ``progress`` of each model the first time it is planned (a narrowed build plans it again)."""
    done: set[str] = set()

    def report(name: str) -> None:
        if progress is not None and name not in done:
            done.add(name)
            progress(len(done), total, name)

    return report
