"""Every error repogen raises on a user's mistake or an environment problem, and its exit status.

Every one subclasses :class:`RepogenError`, and its message says what was expected and how to fix
it. The CLI catches ``RepogenError`` in one place (``repogen.cli``) and prints ``Error: <message>``
with the error's ``exit_code`` (1); a :class:`UsageError` (options that contradict each other, a value
an option cannot take) becomes click's usage error there, with the command's usage line and exit
status 2, as click's own are. The runtime vendored into every model has its own errors (``repogen.runtime.errors``):
it imports nothing of repogen's. The modules that raise these re-export the ones callers catch
(``repogen.server.provision.install.ServerInstallError``), so either import works. repogen's warnings are here
too, under :class:`RepogenWarning` (``repogen.build.LargePackagesWarning`` and the like import from here).
"""

from __future__ import annotations

from typing import Any


class RepogenError(Exception):
    """Root of repogen's errors: the message names what is wrong and what to do about it."""

    exit_code = 1
    """The CLI's exit status for this error (2: a usage error, :class:`UsageError`)."""

    details = ""
    """The longer story, when there is one (the traceback of the user's code that failed): ``--traceback``."""


class UsageError(RepogenError):
    """The command line asks for something contradictory or malformed (``--prebuilt`` with ``--app``, no target).

    Library code raises it; ``repogen.cli`` shows it as click's ``UsageError`` (usage line, exit 2). The
    message names the options, what was expected, and which to drop or add.
    """

    exit_code = 2


class BuildError(RepogenError):
    """A user's declaration cannot become a loadable repository; the message says how to fix it."""

    site: object = None
    """Where the user declared what failed (``repogen.dsl.site.Site``), already at the front of the message."""


class NoSourceError(BuildError):
    """A code object whose source cannot be found or does not match it."""


class UnreachableContainersError(BuildError):
    """What a build ships cannot load in some targeted containers: no wheel for their Python, another CUDA major.

    A default build leaves those containers out and warns (``repogen.build``); a build that names its
    container, or requires every one (``--all-containers``), fails with the message.
    """

    def __init__(self, message: str, reason: str, containers: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        """The cause in a clause: ``scikit-learn 1.9.1 has no wheel for Python 3.10 (1.7.2 has one)``."""
        self.containers = containers
        """The targeted releases (``repogen.triton.releases.Release``, which imports this module) it cannot load in."""


class GraphMismatchError(BuildError):
    """An exported network's declared tensors disagree with its graph (name, data type or dims)."""


class UnknownReleaseError(RepogenError, LookupError):
    """A Triton release that is not in repogen's table (``repogen.triton.releases``)."""


class RepogenWarning(UserWarning):
    """Root of repogen's warnings: something works, on an assumption or with a limit the user should know.

    The CLI prints each as one ``Warning: <message>`` line on stderr (``repogen.cli``).
    """


class ReleaseAssumedWarning(RepogenWarning):
    """A Triton release newer than repogen's table: its facts are assumed to be the newest row's."""


class ReleaseRuleWarning(RepogenWarning):
    """Something of the build that some targeted (or later) releases treat differently (repogen.emit.release_rules)."""


class ContainersLeftOutWarning(RepogenWarning):
    """A default build targets fewer containers than every one from 23.10: its packages cannot reach the others."""


class LargePackagesWarning(RepogenWarning):
    """The shipped packages pass ``repogen.build.LARGE_PACKAGES`` bytes for a container Python (torch with its CUDA
    libraries)."""


class SharedObjectWarning(RepogenWarning):
    """Two bound models hold one object: in the server each gets its own copy, and neither sees the other's changes."""


class RepositoryError(RepogenError):
    """A built model repository cannot be read (not a directory, no model, an unparsable file)."""


class DeployError(RepogenError):
    """A deployment input is unusable; the message names what, what was expected and the fix."""


class ServerInstallError(RepogenError, RuntimeError):
    """Installing tritonserver or its Python environment failed (fetching or verifying a wheel, a venv)."""


class PythonNotFoundError(ServerInstallError):
    """No interpreter of the requested ``major.minor`` version is installed."""


class TritonServerError(RepogenError, RuntimeError):
    """tritonserver did not start, did not become ready, or misbehaved."""


class DockerError(RepogenError, RuntimeError):
    """No Docker engine answers, or a ``docker`` command it ran failed; the message carries its output."""


class ServeError(RepogenError):
    """The server could not be installed, started or kept running; the message says what to do."""


class InferError(RepogenError):
    """A request could not be made or was refused; the message says what to change."""


class ModelControlError(RepogenError):
    """``repogen load``/``unload``: the server refused to load or unload a model; the message quotes why."""


class BuildWithError(RepogenError, RuntimeError):
    """``repogen build`` failed under another Python (the tests' builders); the message carries its output."""


class TuneError(RepogenError):
    """``repogen tune``: Model Analyzer could not run, or found nothing to recommend."""


class SigningError(RepogenError):
    """A repository cannot be signed or checked: no signing extra, an unusable key, a file signatures cannot cover."""


class VerificationError(RepogenError):
    """A repository does not verify: the message names each changed, missing and added file, or the bad signature."""
