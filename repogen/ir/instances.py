"""Lowering instance groups and their rate limiters."""

from __future__ import annotations

from collections.abc import Sequence

from ..dsl.config import InstanceGroup, RateLimiter
from ..errors import BuildError
from .gpu_instances import Held, default_groups
from .spec import InstanceGroupSpec, RateLimiterSpec

_KINDS = {"KIND_CPU": "KIND_CPU", "CPU": "KIND_CPU", "KIND_GPU": "KIND_GPU", "GPU": "KIND_GPU"}


def lower_instance_groups(
    name: str, groups: Sequence[InstanceGroup] | None, callables: int, held: Sequence[Held | None] = ()
) -> tuple[InstanceGroupSpec, ...]:
    """Groups get explicit names ``<model>_<i>`` so the runtime can find an instance's callable.

    Without ``groups``, callables holding CUDA tensors (``held``, one entry per callable) put their instances on
    the GPUs the build made them on (``gpu_instances.default_groups``); otherwise one KIND_CPU group runs them all.
    """
    where = f"model '{name}'"
    if not groups:
        placed = default_groups(name, held)
        if placed is not None:
            return placed
        return (InstanceGroupSpec(name=f"{name}_0", kind="KIND_CPU", count=callables, gpus=()),)
    specs = []
    for index, group in enumerate(groups):
        if not isinstance(group, InstanceGroup):
            raise BuildError(f"{where}: instance_groups[{index}] must be a repogen.InstanceGroup, found {group!r}")
        kind = _KINDS.get(str(group.kind).upper())
        if kind is None:
            raise BuildError(
                f"{where}: instance_groups[{index}].kind must be KIND_CPU or KIND_GPU, found {group.kind!r}"
            )
        gpus = tuple(group.gpus or ())
        if isinstance(group.count, bool) or not isinstance(group.count, int) or group.count < 1:
            raise BuildError(f"{where}: instance_groups[{index}].count must be an integer >= 1, found {group.count!r}")
        if gpus and kind != "KIND_GPU":
            raise BuildError(
                f"{where}: instance_groups[{index}] lists gpus {list(gpus)} but is {kind}; use kind='KIND_GPU'"
            )
        if any(not isinstance(g, int) or g < 0 for g in gpus):
            raise BuildError(f"{where}: instance_groups[{index}].gpus must be device ids >= 0, found {list(gpus)}")
        specs.append(
            InstanceGroupSpec(
                name=f"{name}_{index}",
                kind=kind,
                count=group.count,
                gpus=gpus,
                rate_limiter=lower_rate_limiter(where, group.rate_limiter),
            )
        )
    total = sum(spec.instances for spec in specs)
    if callables > 1 and total != callables:
        raise BuildError(
            f"{where}: infer_func lists {callables} callables (one per instance) but instance_groups make {total} "
            "instances; bind one callable, or as many as there are instances"
        )
    return tuple(specs)


def lower_rate_limiter(where: str, limiter: RateLimiter | None) -> RateLimiterSpec | None:
    if limiter is None:
        return None
    if not isinstance(limiter, RateLimiter):
        raise BuildError(f"{where}: rate_limiter must be a repogen.RateLimiter, found {type(limiter).__name__}")
    resources = []
    for is_global, mapping in ((False, limiter.resources), (True, limiter.global_resources)):
        for name, count in sorted((mapping or {}).items()):
            if not isinstance(name, str) or not name or not isinstance(count, int) or count < 1:
                raise BuildError(
                    f"{where}: rate limiter resources map a name to a count >= 1, found {name!r}: {count!r}"
                )
            resources.append((name, is_global, count))
    if limiter.priority < 0:
        raise BuildError(f"{where}: rate limiter priority must be >= 0, found {limiter.priority}")
    return RateLimiterSpec(resources=tuple(resources), priority=limiter.priority)
