"""Lowering model versions and version policies, and choosing one version for ``--model-version N``.

A version policy is checked on its own when declared, and against the versions a model holds: those
bound, or for ``--model-version N`` those present once N is merged into the repository on disk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import TypeVar

from ..dsl.config import VersionPolicy
from ..dsl.repository import ModelDefinition, NetworkDefinition
from ..errors import BuildError
from .spec import ModelSpec, Policy, RepositorySpec, VersionSpec

Declared = TypeVar("Declared", ModelDefinition, NetworkDefinition)


def lower_version(where: str, definition: ModelDefinition) -> VersionSpec:
    version = definition.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BuildError(f"{where}: model_version must be an integer >= 1, found {version!r}")
    if not definition.infer_funcs:
        raise BuildError(f"{where}: infer_func is an empty list; pass a callable or a list of callables")
    for index, func in enumerate(definition.infer_funcs):
        if not callable(func):
            raise BuildError(
                f"{where}: infer_func[{index}] is a {type(func).__name__}, not a callable; pass a function, "
                "a callable object or a list of them"
            )
    return VersionSpec(version=version, infer_funcs=tuple(definition.infer_funcs))


def lower_version_policy(where: str, policy: VersionPolicy | None, versions: list[VersionSpec]) -> Policy | None:
    return bind_policy(where, declared_policy(where, policy), [v.version for v in versions])


def declared_policy(where: str, policy: VersionPolicy | None) -> Policy | None:
    """The policy as declared, checked on its own: ``(kind, numbers)``, None when none is declared."""
    if policy is None:
        return None
    if not isinstance(policy, VersionPolicy) or policy.kind not in ("latest", "all", "specific"):
        raise BuildError(f"{where}: version_policy must be VersionPolicy.latest(n), .all() or .specific(...)")
    if policy.kind == "latest" and (len(policy.versions) != 1 or policy.versions[0] < 1):
        raise BuildError(f"{where}: VersionPolicy.latest(n) needs n >= 1, found {policy.versions}")
    return policy.kind, tuple(policy.versions)


def bind_policy(where: str, declared: Policy | None, versions: Sequence[int]) -> Policy | None:
    """The policy of a model holding ``versions``: all of them when several and none declared; a specific one
    must name versions it holds."""
    numbers = sorted(versions)
    if declared is None:
        return ("all", ()) if len(numbers) > 1 else None
    kind, named = declared
    missing = sorted(set(named) - set(numbers)) if kind == "specific" else []
    if missing or (kind == "specific" and not named):
        raise BuildError(
            f"{where}: VersionPolicy.specific{named} names versions {missing or '()'} that are not bound; bound "
            f"versions: {numbers}"
        )
    return declared


def merged_versions(spec: RepositorySpec, present: Mapping[str, Collection[int]]) -> RepositorySpec:
    """A ``--model-version N`` build merged into a repository whose models then hold ``present`` versions: each model's
    declared policy (``spec.declared_policies``) bound to those versions."""
    declared = dict(spec.declared_policies)

    def merged(model: ModelSpec) -> ModelSpec:
        where = f"model '{model.name}'"
        policy = bind_policy(where, declared.get(model.name), list(present[model.name]))
        return dataclasses.replace(model, version_policy=policy)

    networks = tuple(dataclasses.replace(n, model=merged(n.model)) for n in spec.networks)
    return dataclasses.replace(spec, models=tuple(merged(m) for m in spec.models), networks=networks)


def select_version(name: str, definitions: list[Declared], version: int) -> tuple[Declared, Policy | None]:
    """The one binding ``--model-version N`` builds, renumbered ``N``, and its declared version policy, set aside for
    the merge (``merged_versions``), which binds it to every version present then."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BuildError(f"--model-version must be an integer >= 1, found {version!r}")
    matching = [d for d in definitions if d.version == version] if len(definitions) > 1 else definitions
    if len(matching) != 1:
        found = sorted(d.version for d in definitions)
        raise BuildError(
            f"model '{name}' is bound as versions {found}; --model-version {version} needs one binding per model "
            f"(or one with model_version={version}); build without --model-version to write every bound version"
        )
    declared = declared_policy(f"model '{name}'", matching[0].config.version_policy)
    config = dataclasses.replace(matching[0].config, version_policy=None)
    return dataclasses.replace(matching[0], version=version, config=config), declared
