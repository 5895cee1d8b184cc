"""``repogen status``: the models a running server knows, their state, and what they have served."""

from __future__ import annotations

import click

from ..deploy.probe import silent_models
from ..server.client.status import server_status
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
    prober = silent_models if probe and protocol == "http" else None  # the probe is an HTTP request
    report = server_status(url, protocol, token, metrics_url, prober)
    for line in [report.json()] if as_json else report.lines():
        click.echo(line)


COMMANDS = [status]
