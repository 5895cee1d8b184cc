"""Click parameter types shared by the commands (this module defines no command)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import UnknownReleaseError
from ..triton.releases import RELEASES, Release, get_release

__all__ = ["RELEASE_HELP", "TritonRelease"]

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
