"""``repogen status``: what a running server says of its models, read once, as rows, lines or JSON.

Each model's state and failure reason (states.py), the requests it served and failed (counts.py, the
metrics endpoint included where the release counts error responses as successes), and, from a prober
(the deployment files' liveness probe, sent from here: ``repogen.deploy.probe.silent_models``), which
READY models do not answer: a dead backend stub stays READY in the index.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...triton.endpoints import DEFAULT_PORTS, METRICS_PATH
from ...triton.known_issues import error_responses_count_as_success
from .counts import fetch_metrics, missing_options, served_counts
from .infer import ModelClient
from .states import ModelState, model_states

__all__ = ["Prober", "ServerStatus", "server_status"]

Prober = Callable[[ModelClient, Sequence[ModelState]], tuple[dict[str, str], dict[str, str]]]
"""``(client, states)`` → the READY models that do not answer and why, and those it could not probe and why."""

_NONE_SERVED = {"requests": 0, "failed": 0, "mean_request_us": 0.0}


@dataclass(frozen=True)
class ServerStatus:
    url: str
    ready: bool
    version: str
    metrics_url: str
    metrics_read: bool
    rows: list[dict[str, Any]]
    """Per model version: name, version, state, reason, requests, failed, mean_request_us, answers (None: not
    probed), no_answer, unprobed, missing_options (the tritonserver options it depends on that the server lacks)."""
    silent: dict[str, str] | None
    """The READY models that did not answer their probe (None: not probed)."""
    unprobed: dict[str, str]

    def json(self) -> str:
        return json.dumps(self.rows)

    def lines(self) -> list[str]:
        """The table ``repogen status`` prints, each model's reason under it, then what the counts cannot say."""
        width = max([len(r["name"]) for r in self.rows] + [5])
        lines = [
            f"{self.url}: {'ready' if self.ready else 'NOT ready'}, {len(self.rows)} model(s)",
            f"  {'MODEL':<{width}}  VERSION  STATE        REQUESTS  FAILED  MEAN (us)",
        ]
        for row in self.rows:
            lines.append(f"  {row['name']:<{width}}  {row['version'] or '-':<7}  {row['state']:<11}  "
                         f"{row['requests']:>8}  {row['failed']:>6}  {row['mean_request_us']:>9}")  # fmt: skip
            if row["reason"]:
                lines.append(f"    {row['reason']}")
            if row["answers"] is False:
                lines.append(f"    does not answer: {row['no_answer']}")
            if row["unprobed"]:
                lines.append(f"    not probed: {row['unprobed']}")
            for option in row["missing_options"]:
                lines.append(f"    tritonserver was started without {option}, which this model depends on "
                             "(repogen inspect says why; the server log names the fix)")  # fmt: skip
        return lines + self._notes()

    def _notes(self) -> list[str]:
        notes = []
        version, metrics = self.version, self.metrics_url
        if not self.metrics_read and error_responses_count_as_success(version):
            notes.append(f"FAILED counts only what tritonserver {version} counts: no metrics at {metrics}, where the "
                         "runtime counts its error responses (pass --metrics-url).")  # fmt: skip
        if self.silent:
            notes.append(f"{len(self.silent)} READY model(s) do not answer: {', '.join(sorted(self.silent))} "
                         "(restart the server)")  # fmt: skip
        if self.unprobed:
            notes.append(f"{len(self.unprobed)} READY model(s) could not be probed: {', '.join(sorted(self.unprobed))} "
                         "(their metadata or config could not be read; see above)")  # fmt: skip
        return notes


def server_status(
    url: str | None,
    protocol: str,
    token: str | None = None,
    metrics_url: str | None = None,
    prober: Prober | None = None,
) -> ServerStatus:
    """Ask the server at ``url`` (default: this machine's) once; ``metrics_url`` defaults to its host's port 8002."""
    with ModelClient(protocol, url, token) as client:
        client.check_live()
        states = model_states(client.index())
        version = client.server_version()
        metrics_url = metrics_url or f"http://{client.url.rsplit(':', 1)[0]}:{DEFAULT_PORTS['metrics']}{METRICS_PATH}"
        metrics = fetch_metrics(metrics_url)
        served = served_counts(client.statistics(), version, metrics)
        lacking = missing_options(metrics) if metrics is not None else {}
        ready = client.client.is_server_ready()
        silent, unprobed = prober(client, states) if prober is not None else (None, {})
    rows = [_row(state, served, silent, unprobed) | {"missing_options": lacking.get(state.name, [])} for state in
            states]  # fmt: skip
    return ServerStatus(client.url, ready, version, metrics_url, metrics is not None, rows, silent, unprobed)


def _row(
    state: ModelState,
    served: dict[tuple[str, str], dict[str, Any]],
    silent: dict[str, str] | None,
    unprobed: dict[str, str],
) -> dict[str, Any]:
    answers = None if silent is None or state.state != "READY" else state.name not in silent
    return {
        "name": state.name, "version": state.version, "state": state.state or "NOT LOADED",
        "reason": state.line().split(": ", 1)[1] if state.failed else "",
        **served.get((state.name, state.version), _NONE_SERVED),
        "answers": answers, "no_answer": (silent or {}).get(state.name, ""), "unprobed": unprobed.get(state.name, ""),
    }  # fmt: skip
