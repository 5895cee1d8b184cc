"""The tritonserver flags a model depends on, and a model that finds its server started without them.

A ``ModelConfig(response_cache=True)`` caches nothing unless the server was started with ``--cache-config``, and an
instance's rate limiter does nothing unless it runs with ``--rate-limit=execution_count``; neither says so. The
build records what a repository's models need (``repogen.triton.server_options``: the flags, their values, the
models that need each) in ``repogen.manifest.json``, and every way repogen starts a server passes them. A model's
first instance reads its server's command line (``/proc/<server pid>/cmdline``, runtime/stub.py) and logs one line
per flag it lacks, and sets ``repogen_server_option_missing{model, option}`` to 1 on the metrics endpoint, where
``repogen status`` finds it on any machine.

The flags' names are the contract's (runtime/contract/tritonserver_flags.py), which ``repogen.triton`` imports too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from .contract import MANIFEST_FILE, MISSING_METRIC, Manifest
from .contract.tritonserver_flags import (
    CACHE_FLAG,
    OLD_CACHE_FLAG,
    POOL_FLAG,
    RATE_LIMIT_FLAG,
    RATE_LIMIT_MODE,
    RESOURCE_FLAG,
    flag_values,
)

MISSING_HELP = "1 where a model depends on a tritonserver option its server was started without"


def satisfied(argv: Sequence[str] | None, flag: str, value: str) -> bool:
    """Whether a server started with ``argv`` has what ``flag=value`` asks for.

    A cache of any kind or size serves a model that caches (the size is the repository's advice); a resource or a
    CUDA pool is satisfied by one given for the same name or device; the rate limiter needs its mode.
    """
    given = flag_values(argv, flag)
    if flag == CACHE_FLAG:
        return any(v.strip() for v in [*given, *flag_values(argv, OLD_CACHE_FLAG)])
    if flag == RATE_LIMIT_FLAG:
        return bool(given) and given[-1].strip().lower() == value.lower()
    if flag in (RESOURCE_FLAG, POOL_FLAG):
        key = value.split(":")[0].lower()
        return any(v.split(":")[0].lower() == key for v in given)
    return bool(given)


def config_needs(config: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(flag, value, why)`` for what a model's own config (Triton's JSON of it) asks of the server."""
    needs = []
    if (config.get("response_cache") or {}).get("enable"):
        needs.append((CACHE_FLAG, "", "its config enables the response cache (ModelConfig(response_cache=True)), "
                      "which caches nothing in a server started without a cache"))  # fmt: skip
    if any(group.get("rate_limiter") for group in config.get("instance_group") or ()):
        needs.append((RATE_LIMIT_FLAG, RATE_LIMIT_MODE, "its instances declare rate limiter resources, which a "
                      "server schedules by only with the rate limiter on"))  # fmt: skip
    return needs


def recorded_needs(model: str, repository: str) -> list[tuple[str, str, str]]:
    """``(flag, value, why)`` the build recorded for ``model`` in the repository's manifest (none without one)."""
    try:
        with open(os.path.join(repository, MANIFEST_FILE), encoding="utf-8") as handle:
            record = json.load(handle).get(Manifest.SERVER) or {}
    except (OSError, ValueError, AttributeError):
        return []
    needs = []
    for option in record.get("options") or ():
        if isinstance(option, dict) and model in (option.get("models") or ()):
            needs.append((str(option.get("flag", "")), str(option.get("value", "")), str(option.get("why", ""))))
    return needs


def missing(model: str, needs: Sequence[tuple[str, str, str]], argv: Sequence[str]) -> list[tuple[str, str]]:
    """``(flag, line)`` for each flag of ``needs`` the server's ``argv`` lacks, the line naming the flag, why it is
    needed, and the fix."""
    found: list[tuple[str, str]] = []
    for flag, value, why in needs:
        if not flag or any(flag == f for f, _ in found) or satisfied(argv, flag, value):
            continue
        wanted = f"{flag}={value}" if value else flag
        found.append((flag, (
            f"model '{model}': tritonserver was started without {wanted}: {why}. Start it with {wanted} (`repogen "
            "inspect` lists every option the repository needs; `repogen serve` and the files `repogen deploy` "
            "writes pass them)"
        )))  # fmt: skip
    return found


def needs_of(model: str, config: dict[str, Any], model_dir: str) -> list[tuple[str, str, str]]:
    """What ``model`` asks of its server, each flag once: what its config says (why, in its words) with the value
    the build recorded (the cache's size), then what only the build recorded (resource counts, the CUDA pool)."""
    recorded = recorded_needs(model, os.path.dirname(os.path.abspath(model_dir)))
    values = {flag: value for flag, value, _ in recorded}
    own = [(flag, values.get(flag, value), why) for flag, value, why in config_needs(config)]
    flags = {flag for flag, _, _ in own}
    return [*own, *(need for need in recorded if need[0] not in flags)]


class MissingGauge:
    """``repogen_server_option_missing{model, option}``: set to 1 for each flag a model finds its server lacks.

    Kept for the server's life as runtime/metrics.py keeps its counter (a family freed as the stub exits crashes it).
    """

    def __init__(self, pb_utils: Any, model: str, flags: Sequence[str]):
        import ctypes

        family = getattr(pb_utils, "MetricFamily", None)
        if family is None or not hasattr(family, "GAUGE") or not flags:
            return
        try:
            kept = family(name=MISSING_METRIC, description=MISSING_HELP, kind=family.GAUGE)
            metrics = [kept.Metric(labels={"model": model, "option": flag}) for flag in flags]
            for metric in metrics:
                metric.set(1)
        except Exception:  # metrics off (--allow-metrics=false): the log line still says it
            return
        for obj in (kept, *metrics):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def report_missing(backend: Any, log: Any, model: str, args: dict[str, str], server_argv: Sequence[str]) -> None:
    """Log the server options ``model`` depends on that its server was started without, and set them on a gauge
    (``runtime.triton_model`` at load, once per model: its first instance)."""
    needs = needs_of(model, json.loads(args["model_config"]), args["model_repository"])
    lacking = missing(model, needs, server_argv)
    for _, line in lacking:
        log("log_warn", line)
    if lacking:
        MissingGauge(backend, model, [flag for flag, _ in lacking])
