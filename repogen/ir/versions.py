"""Lowering model versions and version policies, and choosing one version for ``--version N``."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from ..dsl.config import VersionPolicy
from ..dsl.repository import ModelDefinition, NetworkDefinition
from ..errors import BuildError
from .spec import VersionSpec

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


def lower_version_policy(
    where: str, policy: VersionPolicy | None, versions: list[VersionSpec]
) -> tuple[str, tuple[int, ...]] | None:
    numbers = sorted(v.version for v in versions)
    if policy is None:
        return ("all", ()) if len(numbers) > 1 else None
    if not isinstance(policy, VersionPolicy) or policy.kind not in ("latest", "all", "specific"):
        raise BuildError(f"{where}: version_policy must be VersionPolicy.latest(n), .all() or .specific(...)")
    if policy.kind == "latest" and (len(policy.versions) != 1 or policy.versions[0] < 1):
        raise BuildError(f"{where}: VersionPolicy.latest(n) needs n >= 1, found {policy.versions}")
    missing = sorted(set(policy.versions) - set(numbers)) if policy.kind == "specific" else []
    if missing or (policy.kind == "specific" and not policy.versions):
        raise BuildError(
            f"{where}: VersionPolicy.specific{tuple(policy.versions)} names versions {missing or '()'} that are not "
            f"bound; bound versions: {numbers}"
        )
    return policy.kind, tuple(policy.versions)


def select_version(name: str, definitions: list[Declared], version: int) -> Declared:
    """The one binding ``--version N`` builds, renumbered ``N``, its version policy set aside for the merge."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BuildError(f"--version must be an integer >= 1, found {version!r}")
    matching = [d for d in definitions if d.version == version] if len(definitions) > 1 else definitions
    if len(matching) != 1:
        found = sorted(d.version for d in definitions)
        raise BuildError(
            f"model '{name}' is bound as versions {found}; --version {version} needs one binding per model "
            f"(or one with model_version={version}); build without --version to write every bound version"
        )
    config = dataclasses.replace(matching[0].config, version_policy=None)
    return dataclasses.replace(matching[0], version=version, config=config)
