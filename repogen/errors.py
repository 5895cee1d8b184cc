"""Errors raised at build time; the CLI prints them as ``Error: ...`` and exits 1."""


class BuildError(Exception):
    """A user's declaration cannot become a loadable repository; the message says how to fix it."""
