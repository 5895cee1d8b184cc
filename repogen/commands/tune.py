"""``repogen tune``: Model Analyzer on the embedded server, its answer printed as ModelConfig arguments."""

from __future__ import annotations

from pathlib import Path

import click

from ..server.client.perf import parse_shapes
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED, Release
from ..tuning import SearchBudget, TuneOptions, report_lines, tune_target
from .params import release_option, restrict_option


@click.command()
@click.argument("target")
@click.option("--model", "models", multiple=True, metavar="NAME", help="Tune this model (repeatable). Default: "
              "every model but ensembles.")  # fmt: skip
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path), default=Path("tune-reports"),
              show_default=True, help="Where Model Analyzer's reports, logs and configs are kept.")  # fmt: skip
@click.option("--max-instances", type=click.IntRange(1), default=2, show_default=True,
              help="Search instance counts 1..N per model.")  # fmt: skip
@click.option("--max-batch-size", type=click.IntRange(1), default=8, show_default=True,
              help="Search max_batch_size 1, 2, 4, ... up to N (batching models).")  # fmt: skip
@click.option("--max-concurrency", type=click.IntRange(1), default=4, show_default=True,
              help="Measure each config at concurrency 1, 2, 4, ... up to N.")  # fmt: skip
@click.option("--search", type=click.Choice(["brute", "quick"]), default="brute", show_default=True,
              help="brute: every combination of the ranges above; quick: Model Analyzer's hill climbing.")  # fmt: skip
@click.option("--timeout", type=click.IntRange(1), metavar="SECONDS", help="Stop the search after this long "
              "(everything it started is stopped; nothing is recommended).")  # fmt: skip
@click.option("--shape", "shapes", multiple=True, metavar="NAME:D1,D2",
              help="Dimensions of a variable-size input (no batch dimension); default 1 for each -1.")  # fmt: skip
@release_option(help=f"Embedded tritonserver release (default {DEFAULT_RELEASE.tritonserver}; "
                f"{', '.join(r.tritonserver for r in EMBEDDED)}).")  # fmt: skip
@click.option("--server-python", metavar="X.Y", help="Python the server runs models with (default: the release's "
              "NGC container Python).")  # fmt: skip
@click.option("--tritonserver", "tritonserver_path", metavar="PATH", help="Run this tritonserver (e.g. "
              "/opt/tritonserver/bin/tritonserver in an NGC container) with its own backends and Python, "
              "instead of the embedded one.")  # fmt: skip
@restrict_option
def tune(
    target: str, models: tuple[str, ...], reports: Path, max_instances: int, max_batch_size: int,
    max_concurrency: int, search: str, timeout: int | None, shapes: tuple[str, ...],
    triton_release: Release | None, server_python: str | None, tritonserver_path: str | None,
    restrict: tuple[str, ...],
) -> None:  # fmt: skip
    """Tune instance counts and batching with NVIDIA Model Analyzer; print what to write in app.py.

    TARGET is an app (path/app.py:models, built first) or a built repository. Model Analyzer (from PyPI,
    installed into the cache on first use) runs the embedded tritonserver (or --tritonserver) on
    127.0.0.1, measures each config with perf_analyzer, and ranks them by throughput; the top one is
    printed as the ModelConfig arguments that differ from today's, beside today's numbers. Ctrl+C
    stops everything it started.
    """
    budget = SearchBudget(max_instances, max_batch_size, max_concurrency, search)
    options = TuneOptions(
        triton_release, server_python, models, parse_shapes(shapes), budget, timeout, tritonserver_path, restrict
    )
    for line in report_lines(tune_target(target, reports.resolve(), options, click.echo), reports):
        click.echo(line)


COMMANDS = [tune]
