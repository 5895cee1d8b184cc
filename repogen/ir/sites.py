"""Build errors begin with the ``file:line`` where the user declared what failed (``repogen.dsl.site``).

``declared_at(site)`` around the work on one declaration puts its site in front of any
:class:`BuildError` raised inside, once: an error already located (the line inside an ensemble body, the
second of two bindings) keeps its own. As compilers print them: ``app.py:12: model 'M', input 'x': ...``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..dsl.site import Site
from ..errors import BuildError

__all__ = ["declared_at", "located"]


def located(error: BuildError, site: Site | None) -> BuildError:
    """``error`` with ``site`` in front of its message; unchanged without a site or when it has one already.

    Made without calling the constructor (which ``copy.copy`` does, with ``args``): subclasses carry fields
    beside the message (``UnreachableContainersError``'s reason and containers, which a default build reads
    to narrow its targets) and constructors that need them.
    """
    if site is None or error.site is not None:
        return error
    moved = type(error).__new__(type(error))
    moved.__dict__.update(vars(error))
    moved.args = (f"{site}: {error}",)
    moved.site = site
    return moved


@contextlib.contextmanager
def declared_at(site: Site | None) -> Iterator[None]:
    try:
        yield
    except BuildError as exc:
        moved = located(exc, site)
        if moved is exc:
            raise
        raise moved from exc.__cause__
