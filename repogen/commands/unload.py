"""``repogen unload``: unload one model from a running server with explicit model control."""

from __future__ import annotations

import click

from ..server.client.control import unload_model
from .infer import URL_ENV, URL_HELP, access_token_option


@click.command()
@click.argument("model")
@click.option("--url", envvar=URL_ENV, help=URL_HELP)
@click.option("--protocol", type=click.Choice(["http", "grpc"]), default="http", envvar="REPOGEN_PROTOCOL")
@access_token_option
def unload(model: str, url: str | None, protocol: str, token: str | None) -> None:
    """Unload MODEL and wait until the server has released it; `repogen load MODEL` brings it back.

    The server must run with explicit model control: repogen serve DIR --model-control-mode explicit
    """
    state = unload_model(model, url=url, protocol=protocol, token=token)
    version = f" (version {state.version})" if state.version else ""
    click.echo(f"{model}{version}: {state.state or 'NOT LOADED'} ({state.reason or 'unloaded'})")


COMMANDS = [unload]
