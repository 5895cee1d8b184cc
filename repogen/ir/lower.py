"""DSL → IR: the one place where declarations are validated.

Every error names the model and, where there is one, the tensor, then says what was expected,
what was found and how to fix it. The pieces of a model's config are lowered by the modules
beside this one (tensors, batching, instances, versions, warmup, ensembles).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..dsl.config import ModelConfig
from ..dsl.handle import ModelHandle
from ..dsl.repository import EnsembleDefinition, ModelDefinition, NetworkDefinition, Repository
from ..dsl.site import Site
from ..errors import BuildError
from ..triton import python_backend
from .concurrency import lower_concurrency
from .config import lower_config
from .declared import KINDS, lower_declared
from .ensembles import find_cycle, lower_ensemble
from .fusion import fuse
from .gpu_instances import CudaScan, made_on_gpu
from .included import lower_included
from .networks import lower_network
from .placement import settle_transfers
from .references import referenced_handles
from .server import lower_server
from .sites import declared_at, located
from .spec import (
    ClientSpec,
    EnsembleSpec,
    FusedSpec,
    IncludedSpec,
    ModelSpec,
    NetworkSpec,
    Policy,
    RepositorySpec,
    VersionSpec,
)  # fmt: skip
from .tensors import lower_tensors, max_batch_size
from .versions import Declared, lower_version, lower_version_policy, select_version
from .wiring import Interface

# A model name becomes a directory name.
MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


def lower(repository: Repository, *, version: int | None = None, cuda_scan: CudaScan | None = None) -> RepositorySpec:
    """Validate every declaration of ``repository`` and return its IR.

    ``version`` (``repogen build --model-version N``) lowers one binding per model, numbered ``N``; its version
    policy, checked against the versions present once merged, is set aside (``declared_policies``). ``cuda_scan``
    finds the CUDA tensors each model's callables hold (``repogen.pickling.cuda_scan.cuda_callables``, which the
    build and the in-process runner pass: finding them walks what pickling takes, a layer above the IR); without
    it no callable is taken to hold any, and no instance is placed by them.
    """
    if not isinstance(repository, Repository):
        raise BuildError(
            f"expected a repogen.Repository, found {type(repository).__name__}; point `repogen build` "
            "at the Repository object, e.g. app.py:models"
        )
    claimed: dict[str, _Claim] = {}
    by_name: dict[str, list[ModelDefinition]] = {}
    for definition in repository.definitions:
        _claim(claimed, definition.name, _Claim(_BOUND, definition.site), versions=True)
        by_name.setdefault(definition.name, []).append(definition)
    exported: dict[str, list[NetworkDefinition]] = {}
    for network in repository.networks:
        _claim(claimed, network.name, _Claim(_EXPORTED, network.site), versions=True)
        exported.setdefault(network.name, []).append(network)
    included = _lower_included(repository, claimed)
    if not by_name and not exported and not included:
        raise BuildError(
            "the repository declares no model; add one with models.bind(...), @models.model(...) or models.onnx(...)"
        )
    policies: dict[str, Policy | None] = {}
    if version is not None:
        by_name = {name: [_select(name, defs, version, policies)] for name, defs in by_name.items()}
        exported = {name: [_select(name, defs, version, policies)] for name, defs in exported.items()}
    models = [_lower_model(name, defs, cuda_scan) for name, defs in sorted(by_name.items())]
    lowered = [_lower_network(name, defs) for name, defs in sorted(exported.items())]
    networks = [n for n in lowered if isinstance(n, NetworkSpec)]
    models = sorted(models + [m for m in lowered if isinstance(m, ModelSpec)], key=lambda m: m.name)
    return _with_ensembles(repository, claimed, exported, models, networks, included, policies)


def _with_ensembles(
    repository: Repository,
    claimed: dict[str, _Claim],
    exported: dict[str, list[NetworkDefinition]],
    models: list[ModelSpec],
    networks: list[NetworkSpec],
    included: tuple[IncludedSpec, ...],
    policies: dict[str, Policy | None],
) -> RepositorySpec:
    """The repository's IR: its models and networks lowered, with the ensembles over them and the BLS calls."""
    callable_models: list[ModelSpec | IncludedSpec] = [*models, *(served.model for served in networks), *included]
    interfaces = {m.name: Interface.of(m) for m in callable_models}
    for ensemble in repository.ensembles:
        _claim(claimed, ensemble.name, _Claim(_ENSEMBLE, ensemble.site))
        with declared_at(ensemble.site):
            interfaces[ensemble.name] = _ensemble_interface(ensemble)
    ensembles = sorted((_lower_ensemble(repository, d, interfaces) for d in repository.ensembles), key=lambda e: e.name)
    cycle = find_cycle({e.name: [step.model for step in e.steps] for e in ensembles})
    if cycle:
        error = BuildError(f"ensembles form a cycle: {' -> '.join(cycle)}; an ensemble cannot contain itself")
        raise located(error, claimed[cycle[0]].site)
    sites = {name: claim.site for name, claim in claimed.items()}
    models = [_with_clients(repository, model, interfaces, sites.get(model.name)) for model in models]
    fused_names = {d.name for d in repository.ensembles if d.fuse}  # their steps run in-process, not on Triton
    models = settle_transfers(models, [e for e in ensembles if e.name not in fused_names], networks)
    fused = _fused(repository, ensembles, models, exported, included, sites)
    return RepositorySpec(
        models=tuple(models), ensembles=tuple(ensembles), fused=tuple(fused), networks=tuple(networks),
        included=included, declared_policies=tuple(sorted(policies.items())),
        sites=tuple(sorted((n, s) for n, s in sites.items() if s is not None)),
        server=lower_server(repository, models),
    )  # fmt: skip


def _fused(
    repository: Repository,
    ensembles: list[EnsembleSpec],
    models: list[ModelSpec],
    exported: dict[str, list[NetworkDefinition]],
    included: tuple[IncludedSpec, ...],
    sites: dict[str, Site | None],
) -> list[FusedSpec]:
    """Each ensemble declared with ``fuse=True``, as the one Python model that runs its steps in-process."""
    by_model = {m.name: m for m in models}
    config = {d.name: d.config for d in repository.ensembles if d.fuse}
    # an ONNX graph on the Python backend is a Python model (OnnxSession): a fused ensemble runs it in-process
    exported_backends = {
        name: _exported(defs[0])
        for name, defs in exported.items()
        if (defs[0].kind, defs[0].backend) != ("onnx", "python")
    }
    exported_backends.update({i.name: f"an included model directory ({i.runs_on})" for i in included})
    fused = []
    for lowered_ensemble in (e for e in ensembles if e.name in config):
        with declared_at(sites.get(lowered_ensemble.name)):
            fused.append(fuse(lowered_ensemble, config[lowered_ensemble.name], by_model, exported_backends))
    return fused


# How each kind of declaration is named when two of them claim one name.
_BOUND, _EXPORTED, _INCLUDED, _ENSEMBLE = (
    "with bind/@model",
    "as an exported network",
    "with models.include",
    ("as an ensemble"),
)


@dataclasses.dataclass(frozen=True)
class _Claim:
    kind: str
    site: Site | None


def _claim(claimed: dict[str, _Claim], name: str, claim: _Claim, versions: bool = False) -> None:
    """``name`` is a valid model name that no other declaration has (names are directory names); ``versions``:
    declarations of the same kind may share it (they are versions of one model)."""
    with declared_at(claim.site):
        _check_model_name(name)
        taken = claimed.setdefault(name, claim)
        if taken is claim or (versions and taken.kind == claim.kind):
            return
        at = f" (at {taken.site})" if taken.site is not None else ""
        raise BuildError(
            f"model '{name}' is declared both {claim.kind} and {taken.kind}{at}; names are directory names and must "
            "be unique"
        )


def _select(name: str, definitions: list[Declared], version: int, policies: dict[str, Policy | None]) -> Declared:
    with declared_at(definitions[0].site):
        selected, policies[name] = select_version(name, definitions, version)
    return selected


def _lower_network(name: str, definitions: list[NetworkDefinition]) -> ModelSpec | NetworkSpec:
    with declared_at(definitions[0].site):
        return lower_network(name, definitions) if definitions[0].kind == "onnx" else lower_declared(name, definitions)


def _lower_ensemble(
    repository: Repository, definition: EnsembleDefinition, interfaces: dict[str, Interface]
) -> EnsembleSpec:
    with declared_at(definition.site):
        return lower_ensemble(repository, definition, interfaces[definition.name], interfaces)


def _lower_included(repository: Repository, claimed: dict[str, _Claim]) -> tuple[IncludedSpec, ...]:
    """Each included directory once; its name is a directory name like any model's."""
    found = []
    for definition in repository.included:
        _claim(claimed, definition.name, _Claim(_INCLUDED, definition.site))
        with declared_at(definition.site):
            found.append(lower_included(definition))
    return tuple(sorted(found, key=lambda spec: spec.name))


def _exported(definition: NetworkDefinition) -> str:
    """How a fused ensemble's error names an exported network step."""
    if definition.kind == "onnx":
        return f"an ONNX model (backend '{definition.backend}')"
    kind = KINDS.get(definition.kind)
    return f"a {kind.label} (platform '{kind.platform}')" if kind else f"a {definition.kind} model"


def _ensemble_interface(definition: EnsembleDefinition) -> Interface:
    where = f"ensemble '{definition.name}'"
    if not isinstance(definition.config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(definition.config).__name__}")
    return Interface(
        inputs=lower_tensors(where, "input", definition.inputs),
        outputs=lower_tensors(where, "output", definition.outputs, allow_optional=False),
        max_batch_size=max_batch_size(where, definition.config),
    )


def _with_clients(
    repository: Repository, model: ModelSpec, interfaces: dict[str, Interface], site: Site | None
) -> ModelSpec:
    """The handles each version's callables hold become BLS clients; each must name a model of this repository."""
    with declared_at(site):
        return _clients(repository, model, interfaces)


def _clients(repository: Repository, model: ModelSpec, interfaces: dict[str, Interface]) -> ModelSpec:
    versions = []
    for version in model.versions:
        clients = []
        for handle in referenced_handles(list(version.infer_funcs)):
            called = interfaces.get(handle.name) if handle.repository is repository else None
            if called is None:
                raise BuildError(
                    f"model '{model.name}' calls model '{handle.name}' through BLS, but '{handle.name}' is not in "
                    "this repository; bind it to the same Repository"
                )
            clients.append(_client(handle, called, model.placement.tensors))
        versions.append(dataclasses.replace(version, clients=tuple(clients)))
    return dataclasses.replace(model, versions=tuple(versions))


def _client(handle: ModelHandle, called: Interface, tensors: str) -> ClientSpec:
    """A numpy caller asks for host memory where the called model may answer from a GPU: it reads numpy."""
    memory = handle.memory or ("cpu" if tensors == "numpy" and called.on_gpu else None)
    return ClientSpec(
        reference=handle,
        model=handle.name,
        input_types=tuple((t.name, t.data_type) for t in called.inputs),
        outputs=tuple(t.name for t in called.outputs),
        decoupled=called.decoupled,
        requested=handle.requested,
        memory=memory,
        tensors=tensors,
        options=handle.options if handle.options else None,
    )


def _check_model_name(name: Any) -> None:
    if not isinstance(name, str) or not MODEL_NAME.match(name):
        bad = python_backend.invalid_characters(name) if isinstance(name, str) else ""
        also = (
            f"; its {' '.join(repr(c) for c in bad)} would also stop the Python backend of NGC "
            f"{python_backend.NAME_CHECK_FROM} and later (python_backend #404) from starting the model's stubs "
            '("Invalid stub name: contains invalid characters")'
            if bad
            else ""
        )
        raise BuildError(
            f"model name {name!r} is not a valid Triton model name: expected letters, digits, '_', "
            "'.' or '-' (not starting with '.' or '-', at most 128 characters), since it becomes the "
            f"model's directory name{also}"
        )


def _lower_model(name: str, definitions: list[ModelDefinition], cuda_scan: CudaScan | None) -> ModelSpec:
    with declared_at(definitions[0].site):
        return _lowered_model(name, definitions, cuda_scan)


def _lowered_model(name: str, definitions: list[ModelDefinition], cuda_scan: CudaScan | None) -> ModelSpec:
    first = definitions[0]
    where = f"model '{name}'"
    versions = _lowered_versions(where, definitions)
    counts = {len(v.infer_funcs) for v in versions}
    if len(counts) != 1:
        raise BuildError(
            f"{where}: every version must bind the same number of callables (one per instance); found {sorted(counts)}"
        )
    config = first.config
    if not isinstance(config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(config).__name__}")
    batch = max_batch_size(where, config)
    inputs = lower_tensors(where, "input", first.inputs)
    held = tuple(cuda_scan([v.infer_funcs for v in versions])) if cuda_scan is not None else ()
    lowered = lower_config(where, name, config, inputs, batch, counts.pop(), held)
    if lowered.placement.tensors != "numpy":  # the framework the runtime imports for the callable ships with it
        framework = lowered.placement.tensors.partition(".")[0]
        versions = [dataclasses.replace(v, imports=(*v.imports, framework)) for v in versions]
    return ModelSpec(
        name=name,
        inputs=inputs,
        outputs=lower_tensors(where, "output", first.outputs, allow_optional=False),
        max_batch_size=batch,
        scheduler=lowered.scheduler,
        instance_groups=lowered.instance_groups,
        version_policy=lower_version_policy(where, config.version_policy, versions),
        response_cache=lowered.response_cache,
        decoupled=bool(config.decoupled) or any(_streams(f) for v in versions for f in v.infer_funcs),
        strict=bool(first.strict),
        parameters=lowered.parameters,
        versions=tuple(sorted(versions, key=lambda v: v.version)),
        files=_lower_files(where, first.files),
        warmup=lowered.warmup,
        placement=lowered.placement,
        made_on_gpu=made_on_gpu(held, lowered.instance_groups, defaulted=not config.instance_groups),
        max_concurrency=lower_concurrency(where, config, [f for v in versions for f in v.infer_funcs]),
    )


def _lowered_versions(where: str, definitions: list[ModelDefinition]) -> list[VersionSpec]:
    """Each binding of one model as a version: bound identically (one config.pbtxt), each number once."""
    first = definitions[0]
    versions = []
    first_at = f" (the first is at {first.site})" if first.site is not None else ""
    for definition in definitions:
        if (definition.inputs, definition.outputs, definition.config, definition.strict) != (
            first.inputs,
            first.outputs,
            first.config,
            first.strict,
        ):
            error = BuildError(
                f"{where} is bound more than once with different inputs, outputs, config or strict{first_at}; "
                "versions of one model share one config.pbtxt, so bind them identically or use "
                "another model name"
            )
            raise located(error, definition.site)
        with declared_at(definition.site):
            versions.append(lower_version(where, definition))
    numbers = [v.version for v in versions]
    for index, number in enumerate(numbers):
        if number in numbers[:index]:
            earlier = definitions[numbers.index(number)].site
            at = f" (the first is at {earlier})" if earlier is not None else ""
            error = BuildError(
                f"{where} is bound twice with model_version={number}{at}; give each binding its own model name or "
                "a distinct model_version"
            )
            raise located(error, definitions[index].site)
    return versions


def _lower_files(where: str, files: Sequence[Path]) -> tuple[tuple[str, Path], ...]:
    shipped: dict[str, Path] = {}
    for path in files:
        if not path.exists():
            raise BuildError(f"{where}: file to ship {path} does not exist; paths are relative to the declaring module")
        if path.name in shipped:
            raise BuildError(
                f"{where}: two files to ship are named '{path.name}' ({shipped[path.name]} and {path}); "
                "rename one, or ship their common directory"
            )
        shipped[path.name] = path
    return tuple(sorted(shipped.items()))


def _streams(target: Any) -> bool:
    """A generator callable (possibly decorated, or a class's ``__call__``) is a decoupled model."""
    seen = 0
    while target is not None and seen < 32:
        if inspect.isclass(target):
            target = getattr(target, "__call__", None)  # noqa: B004 - the class's method, not callable()
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            return True
        target = getattr(target, "__wrapped__", None)
        seen += 1
    return False
