"""Click parameter types shared by the commands (this module defines no command)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import UnknownReleaseError
from ..triton.releases import RELEASES, Release, get_release
from ..triton.restricted_apis import DEFAULT_RESTRICTED, parse_apis

__all__ = ["RELEASE_HELP", "RestrictedApis", "TritonRelease", "restrict_option"]

F = TypeVar("F", bound=Callable[..., Any])

RELEASE_HELP = (
    f"an NGC release from {RELEASES[0].ngc} to {RELEASES[-1].ngc} or its tritonserver version, in any spelling: "
    "24.10, r24.10, 24.10-py3, 2.51.0, 2.51, v2.51.0, nvcr.io/nvidia/tritonserver:24.10-py3"
)


class TritonRelease(click.ParamType):
    """``--triton-version``: any spelling of a release in the table → its :class:`~repogen.triton.releases.Release`.

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
