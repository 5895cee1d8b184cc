"""Requests served and failed per model version, from the statistics extension and the metrics endpoint.

A Python model's error response is a failed request in 2.39/2.41's statistics but a successful one
from 2.51 on (repogen.triton.known_issues); the runtime counts its error responses in
``repogen_inference_request_failure`` on Triton's metrics endpoint on every release. So the failures
are the statistics' ``fail`` plus, where the release counts error responses as successes, that counter.
"""

from __future__ import annotations

import re
import urllib.request
from typing import Any

from ...runtime.contract import FAILURE_METRIC, MISSING_METRIC
from ...triton.known_issues import error_responses_count_as_success

__all__ = ["fetch_metrics", "missing_options", "repogen_failures", "served_counts"]

_SAMPLE = re.compile(rf"^{FAILURE_METRIC}\{{(?P<labels>[^}}]*)\}}\s+(?P<value>[0-9.eE+-]+)\s*$", re.MULTILINE)
_MISSING = re.compile(rf"^{MISSING_METRIC}\{{(?P<labels>[^}}]*)\}}\s+(?P<value>[0-9.eE+-]+)\s*$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def fetch_metrics(url: str, timeout: float = 2.0) -> str | None:
    """The Prometheus text of ``url`` (``http://host:8002/metrics``), or None when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def repogen_failures(metrics: str) -> dict[tuple[str, str], int]:
    """(model, version) → the runtime's count of failed requests."""
    found = {}
    for sample in _SAMPLE.finditer(metrics):
        labels = dict(_LABEL.findall(sample.group("labels")))
        found[(labels.get("model", ""), labels.get("version", ""))] = int(float(sample.group("value")))
    return found


def missing_options(metrics: str) -> dict[str, list[str]]:
    """model → the tritonserver options it depends on that its server was started without (runtime/server_flags.py:
    each model's first instance finds them when it loads)."""
    found: dict[str, list[str]] = {}
    for sample in _MISSING.finditer(metrics):
        labels = dict(_LABEL.findall(sample.group("labels")))
        if float(sample.group("value")) > 0:
            found.setdefault(labels.get("model", ""), []).append(labels.get("option", ""))
    return {model: sorted(set(options)) for model, options in found.items()}


def served_counts(
    stats: list[dict[str, Any]], server_version: str, metrics: str | None
) -> dict[tuple[str, str], dict[str, Any]]:
    """(model, version) → requests (all executed), failed and the mean time of a request, in µs."""
    counted = repogen_failures(metrics) if metrics is not None else {}
    add_ours = error_responses_count_as_success(server_version)
    found = {}
    for entry in stats:
        key = (entry.get("name", ""), str(entry.get("version", "")))
        inference = entry.get("inference_stats", {})
        success = inference.get("success", {})
        ok, fail = int(success.get("count", 0)), int(inference.get("fail", {}).get("count", 0))
        mean_us = int(success.get("ns", 0)) / ok / 1000 if ok else 0.0
        found[key] = {
            "requests": ok + fail,
            "failed": fail + (counted.get(key, 0) if add_ours else 0),
            "mean_request_us": round(mean_us, 1),
        }
    return found
