"""``repogen status``: the models a running server knows, their state, and what they have served."""

from __future__ import annotations

import json
from typing import Any

import click

from ..deploy.probe import probe_for
from ..deploy.probe_check import check
from ..server.client.counts import fetch_metrics, served_counts
from ..server.client.infer import ModelClient
from ..server.client.states import model_states
from ..triton.endpoints import DEFAULT_PORTS, METRICS_PATH
from ..triton.known_issues import error_responses_count_as_success
from .infer import URL_ENV, URL_HELP, access_token_option


@click.command()
@click.option("--url", envvar=URL_ENV, help=URL_HELP)
@click.option("--protocol", type=click.Choice(["http", "grpc"]), default="http", envvar="REPOGEN_PROTOCOL")
@click.option("--metrics-url", envvar="REPOGEN_METRICS_URL", metavar="URL",
              help="The server's metrics endpoint (default http://<host of --url>:8002/metrics), where the runtime "
              "counts failed requests that 2.51+ statistics count as successes.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: name, version, state, reason, counts.")
@click.option(
    "--probe/--no-probe",
    default=True,
    show_default=True,
    help="Send each READY model one small real request (over HTTP) and say which do not answer.",
)
@access_token_option
def status(
    url: str | None, protocol: str, metrics_url: str | None, as_json: bool, probe: bool, token: str | None
) -> None:
    """List the models of a running Triton server: state, failure reason, requests served and failed.

    A model that failed to load shows its error in one line (the traceback is in the server log). A
    READY model whose backend stub died still shows READY (before NGC 25.12 its ready endpoint says
    200 too): the probe (the request the deployment files' liveness check sends,
    repogen/deploy/probe.py) shows it does not answer, on every release.
    """
    with ModelClient(protocol, url, token) as client:
        client.check_live()
        states = model_states(client.index())
        version = client.server_version()
        metrics_url = metrics_url or f"http://{client.url.rsplit(':', 1)[0]}:{DEFAULT_PORTS['metrics']}{METRICS_PATH}"
        metrics = fetch_metrics(metrics_url)
        served = served_counts(client.statistics(), version, metrics)
        ready = client.client.is_server_ready()
        silent, unprobed = _silent(client, states) if probe and protocol == "http" else (None, {})
    rows = []
    for state in states:
        counts = served.get((state.name, state.version), {"requests": 0, "failed": 0, "mean_request_us": 0.0})
        answers = None if silent is None or state.state != "READY" else state.name not in silent
        rows.append({"name": state.name, "version": state.version, "state": state.state or "NOT LOADED",
                     "reason": state.line().split(": ", 1)[1] if state.failed else "", **counts,
                     "answers": answers, "no_answer": (silent or {}).get(state.name, ""),
                     "unprobed": unprobed.get(state.name, "")})  # fmt: skip
    if as_json:
        click.echo(json.dumps(rows))
        return
    click.echo(f"{client.url}: {'ready' if ready else 'NOT ready'}, {len(rows)} model(s)")
    width = max([len(r["name"]) for r in rows] + [5])
    click.echo(f"  {'MODEL':<{width}}  VERSION  STATE        REQUESTS  FAILED  MEAN (us)")
    for row in rows:
        click.echo(f"  {row['name']:<{width}}  {row['version'] or '-':<7}  {row['state']:<11}  {row['requests']:>8}  "
                   f"{row['failed']:>6}  {row['mean_request_us']:>9}")  # fmt: skip
        if row["reason"]:
            click.echo(f"    {row['reason']}")
        if row["answers"] is False:
            click.echo(f"    does not answer: {row['no_answer']}")
        if row["unprobed"]:
            click.echo(f"    not probed: {row['unprobed']}")
    if metrics is None and error_responses_count_as_success(version):
        click.echo(f"FAILED counts only what tritonserver {version} counts: no metrics at {metrics_url}, where the "
                   "runtime counts its error responses (pass --metrics-url).")  # fmt: skip
    if silent:
        click.echo(f"{len(silent)} READY model(s) do not answer: {', '.join(sorted(silent))} (restart the server)")
    if unprobed:
        click.echo(f"{len(unprobed)} READY model(s) could not be probed: {', '.join(sorted(unprobed))} (their "
                   "metadata or config could not be read; see above)")  # fmt: skip


def _silent(client: ModelClient, states: list[Any]) -> tuple[dict[str, str], dict[str, str]]:
    """READY models that do not answer their probe, with why (a dead stub stays READY in the index), and those
    whose probe could not be made because their metadata or config could not be read, with the error."""
    probes, unprobed = [], {}
    for name in sorted({state.name for state in states if state.state == "READY"}):
        try:
            found = probe_for({"name": name, **client.metadata(name)["config"]})
        except Exception as exc:  # noqa: BLE001 - whatever failed, the model is listed with it, never skipped
            unprobed[name] = f"its metadata could not be read: {type(exc).__name__}: {exc}".splitlines()[0]
            continue
        if found is not None:
            probes.append(found)
    return dict(check(f"http://{client.url}", probes, headers=client.client.headers)), unprobed


COMMANDS = [status]
