"""``repogen infer``: one request against a running server (a stream of responses for a decoupled model)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..server.client.access_key import ENV as ACCESS_ENV
from ..server.client.infer import DEFAULT_URLS, URL_ENV, InferResult, format_json, format_pretty, run_infer
from ..triton.restricted_apis import HEADER

URL_HELP = (
    f"Server address HOST:PORT (default {DEFAULT_URLS['http']} for http, {DEFAULT_URLS['grpc']} for grpc; "
    f"also ${URL_ENV})."
)
F = TypeVar("F", bound=Callable[..., Any])


def access_token_option(func: F) -> F:
    """``--access-token``, for every client command (they import this module for ``--url`` already)."""
    return click.option(
        "--access-token",
        "token",
        metavar="KEY",
        help=f"The server's access key, sent in the {HEADER!r} header (default ${ACCESS_ENV}, else the key of a "
        "`repogen serve` of yours on that port).",
    )(func)


@click.command()
@click.argument("model")
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="An input: a JSON value (a=[[1,2,3]], n=3), a string for BYTES (text=hello) or @file.npy. Once per input.",
)
@click.option("--url", envvar=URL_ENV, help=URL_HELP)
@click.option(
    "--protocol",
    type=click.Choice(["http", "grpc"]),
    envvar="REPOGEN_PROTOCOL",
    help="http (default) or grpc; --stream implies grpc. Also $REPOGEN_PROTOCOL.",
)
@click.option(
    "--output-tensor", "outputs", multiple=True, metavar="NAME", help="Request only this output (repeatable)."
)
@click.option("--stream", is_flag=True, help="A decoupled model: print each response as it arrives (gRPC stream).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (name, datatype, shape, data); one line per response."
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up after SECONDS and cancel the request on the server (gRPC; implies --protocol grpc).",
)
@access_token_option
def infer(
    model: str,
    inputs: tuple[str, ...],
    url: str | None,
    protocol: str | None,
    outputs: tuple[str, ...],
    stream: bool,
    as_json: bool,
    timeout: float | None,
    token: str | None,
) -> None:
    """Send one inference request to MODEL on a running Triton server and print its outputs.

    Datatypes and shapes come from the model's metadata: write values only, e.g.
    repogen infer AddSub --input a=[[1,2]] --input b=[[3,4]]
    """
    count = 0

    def show(result: InferResult) -> None:
        nonlocal count
        count += 1
        click.echo(format_json(result) if as_json else format_pretty(result, f"response {count}"))

    try:
        result = run_infer(
            model,
            list(inputs),
            url=url,
            protocol=protocol or ("grpc" if stream or timeout is not None else "http"),
            outputs=outputs,
            stream=stream,
            on_response=show,
            token=token,
            timeout=timeout,
        )
    except KeyboardInterrupt:  # a stream is cancelled on the server on the way out (ModelClient.stream)
        cancelled = "; the stream was cancelled on the server" if stream else ""
        click.echo(f"{model}: interrupted after {count} response(s){cancelled}.", err=True)
        raise SystemExit(130) from None  # a shell's exit status for SIGINT
    if result is not None:
        click.echo(format_json(result) if as_json else format_pretty(result))
    elif not as_json:
        click.echo(f"{model}: {count} response(s), stream complete.")


COMMANDS = [infer]
