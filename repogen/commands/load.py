"""``repogen load``: load (or reload) one model on a running server with explicit model control."""

from __future__ import annotations

import time

import click

from ..server.client.control import load_model
from .infer import URL_ENV, URL_HELP, access_token_option


@click.command()
@click.argument("model")
@click.option("--url", envvar=URL_ENV, help=URL_HELP)
@click.option("--protocol", type=click.Choice(["http", "grpc"]), default="http", envvar="REPOGEN_PROTOCOL")
@access_token_option
def load(model: str, url: str | None, protocol: str, token: str | None) -> None:
    """Load MODEL from the server's repository (again, if loaded: it picks up changed files) and wait until READY.

    The server must run with explicit model control: repogen serve DIR --model-control-mode explicit
    """
    start = time.monotonic()
    state = load_model(model, url=url, protocol=protocol, token=token)
    version = f" (version {state.version})" if state.version else ""
    click.echo(f"{model}{version}: {state.state or 'NOT LOADED'} in {time.monotonic() - start:.1f} s")


COMMANDS = [load]
