"""What ``repogen serve`` takes (:class:`ServeOptions`), which of its options contradict each other, and the
tritonserver arguments it sets itself or leaves to the user (those after ``--``).

A mistake in these is named before anything is built or started, as a :class:`~repogen.errors.UsageError`
(the CLI shows it with the command's usage line).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...deprecated import renamed_fields
from ...errors import UsageError
from ...triton.releases import Release
from ...triton.restricted_apis import GRPC_FLAG, HTTP_FLAG, parse_apis
from ...triton.server_options import DEFAULT_TRACE_RATE, TRACE_FLAG, trace_args
from .host import HOST
from .target import is_app

__all__ = [
    "EXIT_TIMEOUT",
    "ServeOptions",
    "check_passthrough",
    "explicit_arguments",
    "stop_arguments",
    "without_model_control",
]

# tritonserver options `serve` sets itself → the serve option to use instead.
_MANAGED = {
    "--model-repository": "TARGET", "--model-store": "TARGET",
    "--http-port": "--http-port", "--grpc-port": "--grpc-port", "--metrics-port": "--metrics-port",
    "--http-address": f"nothing: serve binds {HOST}", "--grpc-address": f"nothing: serve binds {HOST}",
    "--metrics-address": f"nothing: serve binds {HOST}", "--backend-directory": "--tritonserver PATH",
    "--log-verbose": "--log-verbose",
    HTTP_FLAG: "--restrict APIS and --access-token KEY", GRPC_FLAG: "--restrict APIS and --access-token KEY",
}  # fmt: skip
_EXPLICIT = {"--model-control-mode": "--reload/--model", "--load-model": "--model NAME"}

# tritonserver (2.45+) waits up to --exit-timeout-secs (default 30) for open HTTP connections before it unloads
# anything, so one client holding a keep-alive connection made Ctrl+C take 30 s. 3 s leaves the stubs time to
# unload when no client is connected (~1.1 s per instance of a model, measured); with a client the wait uses all
# of it and the server exits without the unload, which serve avoids only under explicit model control (it
# unloads every model first, see TritonServer.stop). The user's own value after `--` wins.
EXIT_TIMEOUT = "--exit-timeout-secs=3"


def stop_arguments(args: Sequence[str]) -> list[str]:
    """The exit timeout ``serve`` passes unless the tritonserver arguments after ``--`` set one."""
    return [] if any(arg.split("=", 1)[0] == "--exit-timeout-secs" for arg in args) else [EXIT_TIMEOUT]


def explicit_arguments(names: Sequence[str]) -> list[str]:
    """tritonserver's arguments for explicit model control, loading ``names`` at start."""
    return ["--model-control-mode=explicit", *(f"--load-model={name}" for name in names)]


def without_model_control(args: Sequence[str]) -> list[str]:
    """``args`` less their model control options, which serve is about to set itself."""
    return [arg for arg in args if arg.split("=", 1)[0] not in _EXPLICIT]


def check_passthrough(args: Sequence[str], explicit: bool) -> None:
    managed = dict(_MANAGED, **(_EXPLICIT if explicit else {}))
    for arg in args:
        option = arg.split("=", 1)[0]
        if option in managed:
            raise UsageError(
                f"tritonserver argument {arg!r} after `--`: repogen serve sets {option} itself; use {managed[option]} "
                "instead."
            )


@renamed_fields(triton_version="triton_release")
@dataclass(frozen=True)
class ServeOptions:
    """``repogen serve``'s options, by the names its parameters have; the defaults are the command's.

    ``target``: a built repository, or an app (``path/app.py:models``, ``package.module:models``) built first.
    Ports: ``None`` is Triton's usual one, 0 any free one. ``restrict``: the API groups only the run's key
    (``token``, else ``$REPOGEN_ACCESS_TOKEN``, else a new one) reaches; ``()`` leaves every API open.
    """

    target: str
    tritonserver_args: tuple[str, ...] = ()
    reload: bool = False
    models: tuple[str, ...] = ()
    control: str | None = None
    output: Path | None = None
    app_dir: Path | None = None
    triton_release: Release | None = None
    server_python: str | None = None
    http_port: int | None = None
    grpc_port: int | None = None
    metrics_port: int | None = None
    tritonserver_path: str | None = None
    embedded: bool = False
    image: str | None = None
    ready_timeout: float = 300.0
    log_verbose: int = 0
    verify_key: Path | None = None
    restrict: tuple[str, ...] = field(default_factory=lambda: parse_apis("default"))
    token: str | None = None
    trace_endpoint: str | None = None
    """Trace with OpenTelemetry, exported over OTLP/HTTP to this URL (runtime/tracing.py); None: off."""
    trace_rate: int | None = None
    """With ``trace_endpoint``: one request of every this many (default tritonserver's, 1000)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", str(self.target))  # a Path is welcome; messages quote the text

    @property
    def app(self) -> bool:
        """Whether the target is an app, built (and with :attr:`reload` rebuilt) by serve."""
        return is_app(self.target)

    @property
    def explicit(self) -> bool:
        """Whether the server runs with explicit model control: --reload and --model imply it."""
        return self.reload or bool(self.models) or self.control == "explicit"

    def check(self) -> None:
        """Name the options that contradict each other, before anything is built or started."""
        if not self.app and (self.reload or self.output or self.app_dir):
            raise UsageError(
                f"--reload, --output and --app-dir rebuild from an app; {self.target!r} is a directory. Pass the app "
                "instead: repogen serve path/app.py:models --reload"
            )
        if self.app and self.verify_key is not None:
            raise UsageError(
                f"--verify-key checks a built, signed repository; {self.target!r} is an app. Build and sign it first "
                "(repogen build APP -o DIR --sign-key KEY.pem), then: repogen serve DIR --verify-key PUB.pem"
            )
        if self.control == "none" and (self.reload or self.models):
            raise UsageError("--reload and --model load models explicitly; drop --model-control-mode none.")
        if self.image and (self.embedded or self.tritonserver_path or self.triton_release or self.server_python):
            raise UsageError(
                "--image serves in that container image, with its own tritonserver and Python; --tritonserver, "
                "--triton-release, --server-python and --embedded pick a server on this machine. Pass one or the "
                "other."
            )
        check_passthrough(self.tritonserver_args, self.explicit)
        self.trace_arguments()

    def trace_arguments(self) -> list[str]:
        """tritonserver's tracing arguments for ``trace_endpoint`` (none without it); a UsageError for a rate without
        an endpoint, a bad URL, or ``--trace-config`` after ``--`` beside it."""
        if self.trace_endpoint is None:
            if self.trace_rate is not None:
                raise UsageError("--trace-rate samples what --trace-endpoint exports: pass --trace-endpoint URL too.")
            return []
        if any(arg.split("=", 1)[0] == TRACE_FLAG for arg in self.tritonserver_args):
            raise UsageError(
                f"--trace-endpoint and {TRACE_FLAG} after `--` both set tritonserver's tracing: pass one or the other."
            )
        try:
            return trace_args(self.trace_endpoint, self.trace_rate or DEFAULT_TRACE_RATE)
        except ValueError as exc:
            raise UsageError(f"--trace-endpoint/--trace-rate: {exc}") from None

    def server_arguments(self, load: Sequence[str]) -> list[str]:
        """tritonserver's arguments beyond its repository, endpoints and key: ``load`` the models it loads under
        explicit model control, then the stop timeout, tracing and the user's own arguments."""
        explicit = explicit_arguments(load) if self.explicit else []
        return [
            "--exit-on-error=false", *explicit, *stop_arguments(self.tritonserver_args), *self.trace_arguments(),
            *self.tritonserver_args,
        ]  # fmt: skip
