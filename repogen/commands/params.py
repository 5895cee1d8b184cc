"""Click parameter types shared by the commands (this module defines no command)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from ..errors import UnknownReleaseError
from ..triton.releases import RELEASES, Release, get_release
from ..triton.restricted_apis import DEFAULT_RESTRICTED, parse_apis
from ..triton.server_options import DEFAULT_TRACE_RATE

__all__ = [
    "RELEASE_HELP", "RestrictedApis", "TritonRelease", "release_option", "renamed_option", "restrict_option",
    "trace_options",
]  # fmt: skip

F = TypeVar("F", bound=Callable[..., Any])

RELEASE_HELP = (
    f"an NGC release from {RELEASES[0].ngc} to {RELEASES[-1].ngc} or its tritonserver version, in any spelling: "
    "24.10, r24.10, 24.10-py3, 2.51.0, 2.51, v2.51.0, nvcr.io/nvidia/tritonserver:24.10-py3"
)


class TritonRelease(click.ParamType):
    """``--triton-release``: any spelling of a release in the table → its :class:`~repogen.triton.releases.Release`.

    Every command accepts the same set; one that cannot act on a valid release says so itself
    (``serve`` embeds only the releases with a PyPI wheel).
    """

    name = "release"  # the metavar: RELEASE

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Release:
        if isinstance(value, Release):
            return value
        try:
            return get_release(str(value))
        except UnknownReleaseError as exc:
            self.fail(str(exc), param, ctx)


class RestrictedApis(click.ParamType):
    """``--restrict``: tritonserver API groups, ``default``, ``all`` or ``none`` → the groups, in Triton's order."""

    name = "apis"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        try:
            return parse_apis(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def restrict_option(func: F) -> F:
    """``--restrict``: which API groups need the key (PyTriton 0.7's set by default)."""
    return click.option(
        "--restrict",
        type=RestrictedApis(),
        default="default",
        show_default=True,
        metavar="APIS",
        help=f"API groups only a request carrying the access key reaches: 'default' ({','.join(DEFAULT_RESTRICTED)}, "
        "as PyTriton 0.7), 'none', 'all', or a comma-separated list of tritonserver's groups (health, metadata, "
        "inference, shared-memory, model-config, model-repository, statistics, trace, logging); "
        "'default,inference' adds one.",
    )(func)


def trace_options(func: F) -> F:
    """``--trace-endpoint`` and ``--trace-rate``: tritonserver's OpenTelemetry tracing, off by default."""
    func = click.option(
        "--trace-rate", type=click.IntRange(min=1), metavar="N", help="With --trace-endpoint: trace one request of "
        f"every N (1: every one). Default {DEFAULT_TRACE_RATE}, tritonserver's.",
    )(func)  # fmt: skip
    return click.option(
        "--trace-endpoint", metavar="URL", help="Trace requests with OpenTelemetry, exported over OTLP/HTTP to URL "
        "(http://collector:4318/v1/traces): a span per model, an ensemble's steps and BLS calls under their "
        "caller's, and the callables' own traced_span()s. Default: off.",
    )(func)  # fmt: skip


def renamed_option(name: str, dest: str, old_names: tuple[str, ...], **attrs: Any) -> Callable[[F], F]:
    """The option ``name`` (the command's ``dest`` parameter), and the spellings it replaced, which keep working.

    Each old spelling is a hidden option of its own, so that the command knows which one was typed: it warns on
    stderr, naming the new spelling, and the command hears the value as ``dest``. Two spellings of the one option
    on a command line are refused: which one should win is not for repogen to guess.
    """
    given_key = f"repogen.renamed.{dest}"  # in ctx.meta, which a command's context shares with its group's

    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            ctx.meta.setdefault(given_key, {})[param.opts[0]] = value
        return value

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            given = [name] if ctx.get_parameter_source(dest) is ParameterSource.COMMANDLINE else []
            for old, value in ctx.meta.get(given_key, {}).items():
                click.echo(f"Warning: {old} is deprecated; use {name}", err=True)
                given.append(old)
                kwargs[dest] = value
            if len(given) > 1:
                raise click.UsageError(f"{' and '.join(given)} are one option: pass {name} only.")
            return func(*args, **kwargs)

        for old in old_names:
            click.option(
                old, type=attrs.get("type"), metavar=attrs.get("metavar"), hidden=True, expose_value=False,
                callback=remember,
            )(command)  # fmt: skip
        return cast(F, click.option(name, dest, **attrs)(command))

    return decorate


def release_option(*old_names: str, **attrs: Any) -> Callable[[F], F]:
    """``--triton-release RELEASE`` (the command's ``triton_release``: a :class:`~repogen.triton.releases.Release`);
    ``old_names`` are the spellings a command took before (``--triton-version``), deprecated."""
    return renamed_option(
        "--triton-release", "triton_release", ("--triton-version", *old_names), type=TritonRelease(), **attrs
    )
