"""Lowering of the Triton features PyTriton does not expose: sequence batching, rate limits, warmup."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dsl.config import RateLimiter, SequenceBatcher, Warmup
from ..errors import BuildError
from ..triton.dtypes import triton_data_type
from .spec import RateLimiterSpec, SequenceBatchingSpec, SequenceControlSpec, TensorSpec, WarmupSpec

_CONTROLS = (
    ("start", "CONTROL_SEQUENCE_START"),
    ("end", "CONTROL_SEQUENCE_END"),
    ("ready", "CONTROL_SEQUENCE_READY"),
    ("correlation_id", "CONTROL_SEQUENCE_CORRID"),
)


def lower_sequence_batcher(
    where: str, batcher: SequenceBatcher, max_batch_size: int, inputs: Sequence[TensorSpec]
) -> SequenceBatchingSpec:
    declared = {t.name for t in inputs}
    controls = []
    for field, kind in _CONTROLS:
        name = getattr(batcher, field)
        if name is None:
            continue
        if not isinstance(name, str) or not name:
            raise BuildError(f"{where}: SequenceBatcher.{field} must be an input name or None, found {name!r}")
        if name in declared:
            raise BuildError(
                f"{where}: SequenceBatcher.{field}='{name}' is also a declared input; Triton fills control inputs "
                "itself, so do not declare them (or rename the control)"
            )
        data_type = ""
        if kind == "CONTROL_SEQUENCE_CORRID":
            data_type = triton_data_type(batcher.correlation_id_dtype, f"{where}, correlation_id '{name}'")
            if data_type not in ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING"):
                raise BuildError(f"{where}: correlation_id_dtype must be an integer type or bytes, found {data_type}")
        controls.append(SequenceControlSpec(name=name, kind=kind, data_type=data_type))
    names = [c.name for c in controls]
    if len(set(names)) != len(names):
        raise BuildError(f"{where}: SequenceBatcher control inputs must have distinct names, found {names}")
    if batcher.strategy not in ("direct", "oldest"):
        raise BuildError(f"{where}: SequenceBatcher.strategy must be 'direct' or 'oldest', found {batcher.strategy!r}")
    if batcher.ready is None and batcher.strategy == "direct" and max_batch_size > 0:
        raise BuildError(
            f"{where}: the direct sequence strategy fills empty batch slots with null requests, and without a READY "
            "control the callable cannot tell them from real ones (tritonserver 2.51 crashed when such a callable "
            "raised); keep ready='READY' and skip rows where it is 0, use strategy='oldest', or set batching=False"
        )
    preferred = tuple(batcher.preferred_batch_size or ())
    if preferred and (batcher.strategy != "oldest" or any(not 1 <= p <= max(1, max_batch_size) for p in preferred)):
        raise BuildError(
            f"{where}: preferred_batch_size {list(preferred)} needs strategy='oldest' and sizes between 1 and "
            f"max_batch_size={max_batch_size}"
        )
    if batcher.max_sequence_idle_microseconds < 0 or batcher.max_queue_delay_microseconds < 0:
        raise BuildError(f"{where}: SequenceBatcher idle and queue delays must be >= 0")
    if batcher.max_candidate_sequences < 1:
        raise BuildError(f"{where}: max_candidate_sequences must be >= 1, found {batcher.max_candidate_sequences}")
    return SequenceBatchingSpec(
        max_sequence_idle_microseconds=batcher.max_sequence_idle_microseconds,
        controls=tuple(controls),
        strategy=batcher.strategy,
        max_queue_delay_microseconds=batcher.max_queue_delay_microseconds,
        max_candidate_sequences=batcher.max_candidate_sequences,
        preferred_batch_size=preferred,
    )


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


def lower_warmup(
    where: str, warmups: Sequence[Warmup] | None, inputs: Sequence[TensorSpec], max_batch_size: int
) -> tuple[WarmupSpec, ...]:
    specs = []
    for warmup in warmups or ():
        if not isinstance(warmup, Warmup):
            raise BuildError(f"{where}: warmup entries must be repogen.Warmup, found {type(warmup).__name__}")
        label = f"{where}, warmup '{warmup.name}'"
        if warmup.data not in ("zero", "random"):
            raise BuildError(f"{label}: data must be 'zero' or 'random', found {warmup.data!r}")
        if warmup.count < 1 or warmup.batch_size < 0 or (max_batch_size and warmup.batch_size > max_batch_size):
            raise BuildError(
                f"{label}: needs count >= 1 and 1 <= batch_size <= max_batch_size={max_batch_size} "
                f"(found count={warmup.count}, batch_size={warmup.batch_size})"
            )
        shapes: dict[str, Any] = dict(warmup.shapes or {})
        unknown = sorted(set(shapes) - {t.name for t in inputs})
        if unknown:
            raise BuildError(f"{label}: shapes name unknown inputs {unknown}")
        tensors = []
        for tensor in inputs:
            dims = tuple(shapes.get(tensor.name, tensor.dims))
            if any(not isinstance(d, int) or d < 1 for d in dims):
                raise BuildError(
                    f"{label}: input '{tensor.name}' has variable shape {list(tensor.dims)}; give its warmup shape "
                    f"in Warmup(shapes={{'{tensor.name}': (...)}})"
                )
            tensors.append((tensor.name, tensor.data_type, dims))
        specs.append(
            WarmupSpec(
                name=warmup.name,
                batch_size=warmup.batch_size if max_batch_size else 0,
                count=warmup.count,
                random=warmup.data == "random",
                inputs=tuple(tensors),
            )
        )
    return tuple(specs)
