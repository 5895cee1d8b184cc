"""``repogen perf``: measure a served model with perf_analyzer, inputs written from its metadata."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ..server.client.perf import PerfOptions, run_perf
from .infer import URL_ENV, URL_HELP, access_token_option


@click.command()
@click.argument("model")
@click.argument("perf_analyzer_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- PERF_ANALYZER_ARGS]...")
@click.option("-i", "--input", "inputs", multiple=True, metavar="NAME=VALUE",
              help="An input's value, as `repogen infer` takes it (default: 1, 1.0, true or 'hello').")  # fmt: skip
@click.option("--shape", "shapes", multiple=True, metavar="NAME:D1,D2",
              help="An input's dimensions without the batch dimension (default: every -1 is 1).")  # fmt: skip
@click.option("--url", envvar=URL_ENV, help=URL_HELP)
@click.option("--protocol", type=click.Choice(["http", "grpc"]), envvar="REPOGEN_PROTOCOL",
              help="http (default) or grpc; a decoupled model is measured over a gRPC stream.")  # fmt: skip
@click.option("--concurrency", default="1", show_default=True, metavar="N[:M[:STEP]]",
              help="In-flight requests: one value or a range, as perf_analyzer's --concurrency-range.")  # fmt: skip
@click.option("-b", "--batch-size", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--measurement-interval", type=click.IntRange(min=100), default=1000, show_default=True,
              metavar="MS", help="Milliseconds per measurement window.")  # fmt: skip
@access_token_option
def perf(
    model: str,
    perf_analyzer_args: tuple[str, ...],
    inputs: tuple[str, ...],
    shapes: tuple[str, ...],
    url: str | None,
    protocol: str | None,
    concurrency: str,
    batch_size: int,
    measurement_interval: int,
    token: str | None,
) -> None:
    """Measure MODEL on a running server with perf_analyzer and print its report.

    Every input gets a value and a shape from the model's metadata, so `repogen perf AddSub` just
    works; a streaming (decoupled) model is measured over a gRPC stream. perf_analyzer is installed
    on first use ($REPOGEN_CACHE_DIR). Arguments after `--` go to perf_analyzer: -- -f results.csv
    """
    options = PerfOptions(
        model=model,
        inputs=inputs,
        shapes=shapes,
        url=url,
        protocol=protocol,
        concurrency=concurrency,
        batch_size=batch_size,
        measurement_interval_ms=measurement_interval,
        extra=perf_analyzer_args,
        token=token,
    )
    with tempfile.TemporaryDirectory(prefix="repogen-perf-") as workdir:
        run_perf(options, Path(workdir), click.echo)


COMMANDS = [perf]
