"""onnxruntime's session options for a Python-backend ONNX model, read from its config as Triton's backend reads them.

Triton's onnxruntime backend takes ``intra_op_thread_count``, ``inter_op_thread_count``,
``execution_mode``, ``enable_mem_arena``, ``enable_mem_pattern``,
``memory.enable_memory_arena_shrinkage`` and ``session.use_device_allocator_for_initializers`` from
the config's parameters, and the graph optimization level from ``optimization { graph { level } }``;
the same config means the same session here, so a model moves between the two backends unchanged.

Two differences, on purpose. Without ``intra_op_thread_count`` onnxruntime gives every session a
thread per core, and each model instance is a stub process with a session of its own, so two
instances on two cores run four busy threads. Here the default is the cores this process may use
divided among the model's instances (at least 1); ``"0"`` asks for onnxruntime's own default, as it
does on Triton's backend. And onnxruntime's pool threads spin between runs by default, which pays
where they have cores to themselves; here they share every core with tritonserver's threads and
the stub's, so the spin takes the CPU those need to bring the next batch, and the default is off
(``session.intra_op.allow_spinning``/``session.inter_op.allow_spinning``, onnxruntime's own keys,
``"1"`` turns it back on).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

BOOLEANS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
# optimization { graph { level } } -> onnxruntime's GraphOptimizationLevel member (0 or absent: all)
GRAPH_LEVELS = {-1: "ORT_ENABLE_BASIC", 1: "ORT_ENABLE_EXTENDED", 2: "ORT_DISABLE_ALL"}
SESSION_ENTRIES = ("session.use_device_allocator_for_initializers",)
# onnxruntime's session config keys for its pools' spin-wait, and the value here unless the config gives one
SPINNING = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}
RUN_ENTRIES = ("memory.enable_memory_arena_shrinkage",)


class OnnxOptionError(ValueError):
    """A config parameter onnxruntime cannot take; the model fails to load, naming it."""


def session_options(ort: Any, config: Mapping[str, Any], model: str) -> tuple[Any, Any, int]:
    """``(SessionOptions, RunOptions, intra-op threads)`` for the model whose config JSON is ``config``.

    ``ort`` is the onnxruntime module; the thread count returned is what was asked of it (0: its default).
    """
    parameters = {key: str(value.get("string_value", "")) for key, value in config.get("parameters", {}).items()}
    options = ort.SessionOptions()
    intra = _count(parameters, "intra_op_thread_count", model)
    if intra is None:
        intra = default_intra_op_threads(config)
    if intra > 0:
        options.intra_op_num_threads = intra
    inter = _count(parameters, "inter_op_thread_count", model)
    if inter:
        options.inter_op_num_threads = inter
    mode = parameters.get("execution_mode", "0").strip() or "0"
    if mode not in ("0", "1"):
        raise OnnxOptionError(
            f"model '{model}': parameter execution_mode is {mode!r}; onnxruntime takes 0 (sequential, the default) "
            "or 1 (parallel), as Triton's onnxruntime backend does"
        )
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if mode == "1" else ort.ExecutionMode.ORT_SEQUENTIAL
    level = _graph_level(config, model)
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, GRAPH_LEVELS.get(level, "ORT_ENABLE_ALL"))
    arena = _flag(parameters, "enable_mem_arena", model)
    if arena is not None:
        options.enable_cpu_mem_arena = arena
    pattern = _flag(parameters, "enable_mem_pattern", model)
    if pattern is not None:
        options.enable_mem_pattern = pattern
    for key in SESSION_ENTRIES:
        if key in parameters:
            options.add_session_config_entry(key, parameters[key])
    for key, default in SPINNING.items():
        spin = _flag(parameters, key, model)
        options.add_session_config_entry(key, default if spin is None else str(int(spin)))
    run_options = ort.RunOptions()
    for key in RUN_ENTRIES:
        if key in parameters:
            run_options.add_run_config_entry(key, parameters[key])
    return options, run_options, intra


def default_intra_op_threads(config: Mapping[str, Any], cores: int | None = None) -> int:
    """The cores this process may use divided among the model's instances, at least 1."""
    instances = sum(
        int(group.get("count", 1)) * max(1, len(group.get("gpus", []))) for group in config.get("instance_group", [])
    )
    return max(1, (cores or available_cores()) // max(1, instances))


def available_cores() -> int:
    """CPUs this process may run on (its affinity), capped by a cgroup CPU quota (``docker run --cpus``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cores, quota)) if quota else max(1, cores)


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> int | None:
    """The CPU quota in whole cores (rounded up), from cgroup v2's ``cpu.max`` or v1's CFS files; None if unlimited."""
    try:
        with open(os.path.join(root, "cpu.max")) as file:
            quota, _, period = file.read().strip().partition(" ")
    except OSError:
        try:
            with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as file:
                quota = file.read().strip()
            with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as file:
                period = file.read().strip()
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period or "100000")
    except ValueError:  # "max": no quota
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return math.ceil(quota_us / period_us)


def _count(parameters: Mapping[str, str], key: str, model: str) -> int | None:
    if key not in parameters:
        return None
    text = parameters[key].strip()
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OnnxOptionError(
            f"model '{model}': parameter {key} is {parameters[key]!r}; give a number of threads (0: onnxruntime's "
            "default, a thread per core)"
        )
    return value


def _flag(parameters: Mapping[str, str], key: str, model: str) -> bool | None:
    if key not in parameters:
        return None
    value = BOOLEANS.get(parameters[key].strip().lower())
    if value is None:
        raise OnnxOptionError(
            f"model '{model}': parameter {key} is {parameters[key]!r}; give 1 or 0 (true/false, on/off, yes/no)"
        )
    return value


def _graph_level(config: Mapping[str, Any], model: str) -> int:
    graph = (config.get("optimization") or {}).get("graph") or {}
    try:
        return int(graph.get("level", 0))
    except (TypeError, ValueError):
        raise OnnxOptionError(
            f"model '{model}': optimization.graph.level is {graph.get('level')!r}; give -1 (basic), 1 (extended), "
            "2 (none) or 0 (all, the default)"
        ) from None
