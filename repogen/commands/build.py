"""``repogen build``."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import click

from ..build import build_app
from ..errors import RepogenError
from ..ondisk.reader import read_repository
from ..packages import MODES, PackageOptions
from ..packages.wheel_targets import MACHINES
from ..signing import SignWith
from ..signing.oms import KEY_HELP
from ..triton.releases import Release
from .params import RELEASE_HELP, release_option, renamed_option


@click.command()
@click.argument("app")
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Repository directory to write.")
@click.option(
    "--app-dir",
    type=click.Path(exists=True, file_okay=False),
    help="The user's project directory: modules under it are pickled by value (default: the app file's directory).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace OUTPUT even if it holds files repogen did not write; with --model-version, also replace a changed "
    "config.",
)
@release_option(
    "--target-triton",
    help=f"The one release that will serve the repository ({RELEASE_HELP}): sources and imports are checked "
    "against its container's Python only, and the target is recorded. Default: every NGC release from 23.10 "
    "(Python 3.10 and 3.12) that the shipped packages reach; the others are named in a warning.",
)
@click.option(
    "--all-containers",
    is_flag=True,
    help="Require every NGC release from 23.10: fail when a shipped package cannot reach one (no wheel for its "
    "Python, another CUDA major) instead of leaving it out with a warning.",
)
@click.option(
    "--pin-python",
    is_flag=True,
    help="Ship this Python's bytecode instead of source (for code with no source file): the repository then loads "
    "only on this Python minor; with --triton-release, a different container Python fails the build early.",
)
@click.option(
    "--packages",
    "packages_mode",
    type=click.Choice(MODES),
    default="ship",
    show_default=True,
    help="What happens to the third-party distributions the models import: 'ship' installs them (with their "
    "dependencies, the versions installed here) inside each model version, built for every target container's "
    "Python, so a stock container serves the repository as it is; 'record' only lists them in model.json, for an "
    "image that installs them (repogen deploy --docker).",
)
@click.option(
    "--provided",
    multiple=True,
    metavar="DIST",
    help="A distribution the serving image already has (e.g. torch in an image of your own): recorded, never "
    "shipped. Repeatable. numpy and cloudpickle never ship.",
)
@click.option(
    "--platform",
    "machines",
    multiple=True,
    type=click.Choice(MACHINES),
    help="Linux machine(s) to ship packages for (default: x86_64; add aarch64 for the arm64 containers). Repeatable.",
)
@renamed_option(
    "--model-version",
    "model_version",
    ("--version",),
    type=click.IntRange(min=1),
    metavar="N",
    help="Build every model as version N and add it beside the versions already in OUTPUT (replacing only N).",
)
@click.option(
    "--sign-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=f"Sign the repository with this key before it replaces OUTPUT (OpenSSF Model Signing: model.sig in each "
    f"model directory and at the root; `repogen verify` and `model_signing verify` check them): {KEY_HELP}. "
    "Needs the 'signing' extra.",
)
@click.option("--sign-password", envvar="REPOGEN_SIGN_PASSWORD", help="The key's password ($REPOGEN_SIGN_PASSWORD).")
@click.option(
    "--traceback",
    "show_traceback",
    is_flag=True,
    help="On an error, print the Python traceback behind it first (for an app that fails to import: from its own "
    "first frame).",
)
def build(
    app: str,
    output: str,
    app_dir: str | None,
    force: bool,
    triton_release: Release | None,
    all_containers: bool,
    pin_python: bool,
    packages_mode: str,
    provided: tuple[str, ...],
    machines: tuple[str, ...],
    model_version: int | None,
    sign_key: Path | None,
    sign_password: str | None,
    show_traceback: bool,
) -> None:
    """Build APP (path/to/app.py:attr or package.module:attr) into a model repository."""
    if all_containers and triton_release is not None:
        raise click.UsageError(
            "--all-containers requires every NGC release from 23.10, --triton-release names one: pass one or the other."
        )
    started = time.perf_counter()
    try:
        result = build_app(
            app,
            output,
            app_dir=app_dir,
            force=force,
            triton_release=triton_release,
            pin_python=pin_python,
            version=model_version,
            progress=_Progress(),
            packages=PackageOptions(packages_mode, provided, machines or ("x86_64",)),
            log=lambda line: click.echo(line, err=True),
            all_containers=all_containers,
            sign=SignWith(key=sign_key, password=sign_password) if sign_key else None,
        )
    except RepogenError as exc:
        if show_traceback:
            click.echo(exc.details or "".join(traceback.format_exception(exc)), err=True, nl=False)
        raise
    names = result.spec.names
    elapsed = time.perf_counter() - started
    listed = ", ".join(names) if len(names) <= PROGRESS_FROM else f"{', '.join(names[:5])}, ..."
    click.echo(f"Built {len(names)} model(s) into {output} in {elapsed:.2f}s: {listed}")
    made_on_gpu = [note.message(model.name) for model in result.spec.models for note in model.made_on_gpu]
    if made_on_gpu:
        click.echo("Made on a GPU at bind time (each tensor loads onto its instance's device in the server):")
        for line in made_on_gpu:
            click.echo(f"  {line}")
    if result.made_anew:
        click.echo("Made anew in the server, as they were at build time (each model instance gets its own):")
        for model, made in result.made_anew:
            click.echo(f"  model '{model}': {made.object} at {made.at}")
    if result.packages:
        click.echo(result.packages)
    needed = read_repository(output).server_args()
    if needed:
        click.echo(f"tritonserver options the models depend on: {' '.join(needed)} (repogen inspect says why; "
                   "repogen serve and repogen deploy pass them)")  # fmt: skip
    if sign_key:
        click.echo(f"Signed with key {sign_key}: model.sig in each model directory built and at the root")


PROGRESS_FROM = 20  # models; smaller builds finish before a progress line would help


class _Progress:
    """One stderr line per model while a large repository is emitted (pickling dominates)."""

    def __call__(self, done: int, total: int, name: str) -> None:
        if total >= PROGRESS_FROM:
            click.echo(f"[{done}/{total}] {name}", err=True)


COMMANDS = [build]
