"""Lowering a repository's :class:`~repogen.dsl.config.ServerOptions`: what its server must be started with beyond
what the models' configs say (repogen.triton.server_options reads the rest from the configs)."""

from __future__ import annotations

from collections.abc import Sequence

from ..dsl.config import ServerOptions
from ..dsl.repository import Repository
from ..errors import BuildError
from ..triton.server_options import RESOURCE_FLAG, ServerSettings
from .sites import located
from .spec import ModelSpec

__all__ = ["lower_server"]


def lower_server(repository: Repository, models: Sequence[ModelSpec]) -> ServerSettings:
    """The settings ``repository.server_options`` gives, checked against the models' rate limiters."""
    options = repository.server_options
    if options is None:
        return ServerSettings()
    try:
        return _lowered(options, models)
    except BuildError as exc:
        raise located(exc, repository.site) from None


def _lowered(options: ServerOptions, models: Sequence[ModelSpec]) -> ServerSettings:
    if not isinstance(options, ServerOptions):
        raise BuildError(f"server_options must be a repogen.ServerOptions, found {type(options).__name__}")
    size = options.response_cache_byte_size
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise BuildError(f"ServerOptions(response_cache_byte_size={size!r}): expected a number of bytes > 0")
    counts = dict(options.rate_limit_resources or {})
    declared = _declared(models)
    for name, count in sorted(counts.items()):
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none: no instance group has a RateLimiter"
            raise BuildError(
                f"ServerOptions(rate_limit_resources={{{name!r}: ...}}): no model's rate limiter declares "
                f"resource {name!r}; the resources declared are {known}"
            )
        most, model = max(declared[name])
        if not isinstance(count, int) or isinstance(count, bool) or count < most:
            raise BuildError(
                f"ServerOptions(rate_limit_resources={{{name!r}: {count!r}}}): model {model!r} has instances that "
                f"need {most} of {name!r} each, which a server with fewer never schedules (tritonserver refuses "
                f"to load it); give at least {most}"
            )
    if counts:
        upper = sorted(name for name in declared if name != name.lower())
        if upper:
            raise BuildError(
                f"ServerOptions(rate_limit_resources=...) makes the server read each resource from "
                f"{RESOURCE_FLAG}=NAME:COUNT, whose names tritonserver lower-cases, while it matches the configs' as "
                f"written: resource(s) {', '.join(map(repr, upper))} would count 0 and their models fail to load; "
                "name them in lower case"
            )
    return ServerSettings(size, tuple(sorted(counts.items())))


def _declared(models: Sequence[ModelSpec]) -> dict[str, list[tuple[int, str]]]:
    """Resource name -> (count one instance needs, model) for every rate limiter of ``models``."""
    found: dict[str, list[tuple[int, str]]] = {}
    for model in models:
        for group in model.instance_groups:
            for name, _is_global, count in group.rate_limiter.resources if group.rate_limiter else ():
                found.setdefault(name, []).append((count, model.name))
    return found
