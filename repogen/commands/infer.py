"""``repogen infer``: one request against a running server."""

from __future__ import annotations

import click

from ..server.infer import DEFAULT_URLS, format_json, format_pretty, run_infer


@click.command()
@click.argument("model")
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="An input: a JSON value (a=[[1,2,3]], n=3), a string for BYTES (text=hello) or @file.npy. Repeat per input.",
)
@click.option("--url", help=f"Server address HOST:PORT (default {DEFAULT_URLS['http']} for http, "
              f"{DEFAULT_URLS['grpc']} for grpc).")  # fmt: skip
@click.option("--protocol", type=click.Choice(["http", "grpc"]), default="http", show_default=True)
@click.option("-o", "--output", "outputs", multiple=True, metavar="NAME", help="Request only this output (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON (name, datatype, shape, data).")
def infer(
    model: str, inputs: tuple[str, ...], url: str | None, protocol: str, outputs: tuple[str, ...], as_json: bool
) -> None:
    """Send one inference request to MODEL on a running Triton server and print its outputs.

    Datatypes and shapes come from the model's metadata: write values only, e.g.
    repogen infer AddSub --input a=[[1,2]] --input b=[[3,4]]
    """
    result = run_infer(model, list(inputs), url=url, protocol=protocol, outputs=outputs)
    click.echo(format_json(result) if as_json else format_pretty(result))


COMMANDS = [infer]
