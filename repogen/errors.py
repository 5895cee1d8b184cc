"""The errors repogen raises on a user's mistake or an environment problem.

Every one subclasses :class:`RepogenError`, and its message says what was expected and how to fix
it. The CLI catches ``RepogenError`` in one place (``repogen.cli``) and prints ``Error: <message>``
with exit status 1; a command-line usage error is click's, exit status 2. Errors that belong to one
area live beside it and subclass the root: ``ServerInstallError`` (``repogen.server.install``),
``TritonServerError`` (``repogen.server.process``), ``ServeError`` (``repogen.server.foreground``),
``InferError`` (``repogen.server.infer``). The runtime vendored into every model has its own errors
(``repogen.runtime.errors``): it imports nothing of repogen's.
"""


class RepogenError(Exception):
    """Root of repogen's errors: the message names what is wrong and what to do about it."""


class BuildError(RepogenError):
    """A user's declaration cannot become a loadable repository; the message says how to fix it."""


class UnknownReleaseError(RepogenError, LookupError):
    """A Triton release that is not in repogen's table (``repogen.triton.releases``)."""


class RepositoryError(RepogenError):
    """A built model repository cannot be read (not a directory, no model, an unparsable file)."""


class DeployError(RepogenError):
    """A deployment input is unusable; the message names what, what was expected and the fix."""
