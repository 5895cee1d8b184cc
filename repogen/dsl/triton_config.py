"""PyTriton's ``TritonConfig``: tritonserver's options by PyTriton's names, what :meth:`Triton.run` can apply of them,
and PyTriton's ``PYTRITON_TRITON_CONFIG_*`` variables read into it; PyTriton 0.7's ``TritonSecurityConfig`` (the key
its restricted endpoints take) and ``TritonLifecyclePolicy``."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import secrets
import warnings
from typing import Any

from ..errors import UsageError
from ..triton.restricted_apis import APIS, DEFAULT_RESTRICTED

__all__ = ["ENV_PREFIX", "LOOPBACK", "TritonConfig", "TritonLifecyclePolicy", "TritonSecurityConfig"]

LOOPBACK = ("127.0.0.1", "localhost")
"""The addresses ``Triton.run`` binds: the server runs beside this process, for it and its machine."""

_DEPLOY = "to serve beyond this machine, deploy the built repository (repogen build server.py:triton -o DIR, then "
_DEPLOY += "repogen deploy or any tritonserver)"

# TritonConfig's fields that cannot apply to the server Triton.run starts → why (only a value other than its
# default, None, is refused; False for the allow_* flags of endpoints repogen does not open is welcome).
_REFUSED = {
    "model_repository": "repogen builds the repository from the binds into a directory of its own; to serve a "
    "built one: repogen serve DIR",
    "log_file": "the server's log comes out through this process's logging (logger 'repogen.triton.server'): "
    "a logging.FileHandler on it writes it to a file",
    "http_restricted_api": "Triton(security_config=TritonSecurityConfig(access_token=..., restricted_endpoints=[...])) "
    "chooses the key and the endpoints it guards, over HTTP and gRPC alike, as PyTriton 0.7 does",
    "grpc_restricted_protocol": "Triton(security_config=TritonSecurityConfig(access_token=..., "
    "restricted_endpoints=[...])) chooses the key and the endpoints it guards, over HTTP and gRPC alike, as "
    "PyTriton 0.7 does",
    "sagemaker_port": "the server opens HTTP, gRPC and metrics only; SageMaker's endpoint belongs to a deployment",
    "sagemaker_safe_port_range": "the server opens HTTP, gRPC and metrics only",
    "sagemaker_thread_count": "the server opens HTTP, gRPC and metrics only",
    "vertex_ai_port": "the server opens HTTP, gRPC and metrics only; Vertex AI's endpoint belongs to a deployment",
    "vertex_ai_thread_count": "the server opens HTTP, gRPC and metrics only",
    "vertex_ai_default_model": "the server opens HTTP, gRPC and metrics only",
}
_REFUSED_TRUE = {
    "allow_sagemaker": "the server opens HTTP, gRPC and metrics only; SageMaker's endpoint belongs to a deployment",
    "allow_vertex_ai": "the server opens HTTP, gRPC and metrics only; Vertex AI's endpoint belongs to a deployment",
}
# Fields serve sets from its own options, or which refuse above: none of them becomes a tritonserver argument.
_OWN = {"http_port", "grpc_port", "metrics_port", "http_address", "grpc_address", "metrics_address", "log_verbose"}
ENV_PREFIX = "PYTRITON_TRITON_CONFIG_"
"""PyTriton's: ``PYTRITON_TRITON_CONFIG_GRPC_PORT=8011`` sets ``grpc_port``; a list field's items are ``<NAME>_<i>``."""
_LIST_ITEM = re.compile(r"^(.+?)_(\d+)$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclasses.dataclass
class TritonConfig:
    """PyTriton's ``TritonConfig``: tritonserver's options, by the names and defaults (``None``: tritonserver's
    own, ports 8000, 8001 and 8002) PyTriton has.

    What :meth:`Triton.run` does with them: the ports are the server's; ``log_verbose`` its log level; the server
    binds 127.0.0.1, and an address field may only say that (``127.0.0.1`` or ``localhost``; PyTriton's
    server bound every interface, 0.0.0.0); ``allow_http=False`` is refused (the server is watched over HTTP).
    Every other tritonserver option here (``exit_on_error``, ``strict_readiness``, ``exit_timeout_secs``,
    ``allow_grpc``, ``allow_metrics``, ``cache_config``, ``trace_config``, the gRPC and HTTP tuning, ...) is
    passed to tritonserver as ``--name=value``. Those that cannot apply to a server repogen runs beside this
    process (``model_repository``, ``log_file``, the restricted API settings, SageMaker's and Vertex AI's) raise
    :class:`~repogen.errors.UsageError` here, naming the field and why.
    """

    model_repository: pathlib.Path | None = None
    id: str | None = None
    log_verbose: int | None = None
    log_file: pathlib.Path | None = None
    exit_timeout_secs: int | None = None
    exit_on_error: bool | None = None
    strict_readiness: bool | None = None
    allow_http: bool | None = None
    http_address: str | None = None
    http_port: int | None = None
    http_header_forward_pattern: str | None = None
    http_thread_count: int | None = None
    http_restricted_api: str | None = None
    allow_grpc: bool | None = None
    grpc_address: str | None = None
    grpc_port: int | None = None
    grpc_header_forward_pattern: str | None = None
    grpc_infer_allocation_pool_size: int | None = None
    grpc_use_ssl: bool | None = None
    grpc_use_ssl_mutual: bool | None = None
    grpc_server_cert: pathlib.Path | None = None
    grpc_server_key: pathlib.Path | None = None
    grpc_root_cert: pathlib.Path | None = None
    grpc_infer_response_compression_level: str | None = None
    grpc_keepalive_time: int | None = None
    grpc_keepalive_timeout: int | None = None
    grpc_keepalive_permit_without_calls: bool | None = None
    grpc_http2_max_pings_without_data: int | None = None
    grpc_http2_min_recv_ping_interval_without_data: int | None = None
    grpc_http2_max_ping_strikes: int | None = None
    grpc_restricted_protocol: str | None = None
    allow_metrics: bool | None = None
    allow_gpu_metrics: bool | None = None
    allow_cpu_metrics: bool | None = None
    metrics_interval_ms: int | None = None
    metrics_port: int | None = None
    metrics_address: str | None = None
    allow_sagemaker: bool | None = None
    sagemaker_port: int | None = None
    sagemaker_safe_port_range: str | None = None
    sagemaker_thread_count: int | None = None
    allow_vertex_ai: bool | None = None
    vertex_ai_port: int | None = None
    vertex_ai_thread_count: int | None = None
    vertex_ai_default_model: str | None = None
    metrics_config: list[str] | None = None
    trace_config: list[str] | None = None
    cache_config: list[str] | None = None
    cache_directory: str | None = None
    buffer_manager_thread_count: int | None = None
    response_cache_byte_size: int | None = None
    """PyTriton 0.1's field, still the spelling of PyTriton's docs (tritonserver's ``--response-cache-byte-size``,
    deprecated since 23.03 and refused beside ``--cache-config``): taken as ``cache_config=["local,size=N"]``, with
    a DeprecationWarning."""

    def __post_init__(self) -> None:
        if self.response_cache_byte_size is not None:
            size, self.response_cache_byte_size = self.response_cache_byte_size, None
            warnings.warn(
                f"TritonConfig(response_cache_byte_size={size}) is deprecated (as tritonserver's "
                f"--response-cache-byte-size since 23.03): taken as cache_config=['local,size={size}']; say that "
                "instead",
                DeprecationWarning,
                stacklevel=3,
            )
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise UsageError(f"TritonConfig(response_cache_byte_size={size!r}): expected a number of bytes > 0")
            self.cache_config = [*(self.cache_config or []), f"local,size={size}"]
        if self.allow_http is False:
            what = "and allow_grpc=False leaves no endpoint" if self.allow_grpc is False else "is refused"
            raise UsageError(
                f"TritonConfig(allow_http=False) {what}: repogen watches the server it starts over HTTP (its health "
                "and model states); leave allow_http out, or pass allow_grpc=False to open HTTP alone"
            )
        for name in ("http_address", "grpc_address", "metrics_address"):
            value = getattr(self, name)
            if value is not None and value not in LOOPBACK:
                raise UsageError(
                    f"TritonConfig({name}={value!r}): Triton.run serves on 127.0.0.1 only, for this machine; "
                    f"leave {name} out (or say '127.0.0.1'); {_DEPLOY}"
                )
        for name, why in _REFUSED.items():
            if getattr(self, name) is not None:
                raise UsageError(f"TritonConfig({name}=...) cannot apply: {why}; leave it out")
        for name, why in _REFUSED_TRUE.items():
            if getattr(self, name):
                raise UsageError(f"TritonConfig({name}=True) cannot apply: {why}; leave it out")

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, as PyTriton's ``to_dict``."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> TritonConfig:
        """PyTriton's ``from_dict``: the fields named in ``config`` (others are left out), strings cast to each
        field's type (``"8001"``, ``"false"``, ``"a,b"`` for a list)."""
        fields = {field.name: str(field.type) for field in dataclasses.fields(cls)}
        return cls(**{name: _cast(name, fields[name], value) for name, value in config.items() if name in fields})

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> TritonConfig:
        """PyTriton's ``from_env``: the fields ``PYTRITON_TRITON_CONFIG_<FIELD>`` variables set, ``<FIELD>_<i>`` the
        items of a list field. :class:`Triton` reads them by itself, under the fields its ``config`` sets. Unlike
        PyTriton, ``false``/``0``/``no`` read as False (PyTriton's ``bool("false")`` is True); a value that does not
        read as its field's type, or that :class:`TritonConfig` refuses, raises naming the variable; a variable
        naming no field warns."""
        environ = dict(os.environ if environ is None else environ)
        fields = {field.name: str(field.type) for field in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        items: dict[str, dict[int, tuple[str, str]]] = {}
        for variable, text in sorted(environ.items()):
            if not variable.startswith(ENV_PREFIX):
                continue
            name = variable[len(ENV_PREFIX) :].lower()
            item = _LIST_ITEM.match(name)
            if item and item.group(1) in fields and fields[item.group(1)].startswith("list"):
                items.setdefault(item.group(1), {})[int(item.group(2))] = (variable, text)
            elif name in fields:
                values[name] = _checked(cls, variable, name, fields[name], text)
            else:
                warnings.warn(f"{variable} names no TritonConfig field ({name!r}): ignored", UserWarning, stacklevel=2)
        for name, indexed in items.items():
            listed = [indexed[index][1] for index in sorted(indexed)]
            values[name] = _checked(cls, ", ".join(v for v, _ in indexed.values()), name, fields[name], listed)
        return cls(**values)

    def cache_bytes(self) -> int | None:
        """The size of the local response cache ``cache_config`` gives (``local,size=N``), else None."""
        for item in self.cache_config or ():
            mode, _, setting = str(item).partition(",")
            key, _, value = setting.partition("=")
            if mode.strip() == "local" and key.strip() == "size" and value.strip().isdigit():
                return int(value)
        return None

    def server_arguments(self) -> list[str]:
        """The tritonserver arguments of the fields set (``--name=value``, a list field's once per item), less those
        :meth:`Triton.run` sets from its own options (ports, addresses, ``log_verbose``)."""
        arguments = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None or field.name in _OWN:
                continue
            flag = "--" + field.name.replace("_", "-")
            for item in value if isinstance(value, (list, tuple)) else [value]:
                text = str(item).lower() if isinstance(item, bool) else str(item)
                arguments.append(f"{flag}={text}")
        return arguments


def _cast(name: str, annotation: str, value: Any) -> Any:
    """``value`` (a string, or a list's strings) as field ``name`` of type ``annotation`` takes it."""
    if value is None or not isinstance(value, str) and not annotation.startswith("list"):
        return value
    if annotation.startswith("list"):
        return [str(item) for item in value] if isinstance(value, (list, tuple)) else value.split(",")
    if annotation.startswith("bool"):
        if value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(f"{value!r} is not a boolean: say one of {', '.join(_TRUE + _FALSE)}")
    if annotation.startswith("int"):
        return int(value)
    return pathlib.Path(value) if annotation.startswith("pathlib.Path") else value


def _checked(cls: type[TritonConfig], variable: str, name: str, annotation: str, value: Any) -> Any:
    """The variable's value as its field takes it; what does not read, or TritonConfig refuses, names the variable."""
    try:
        cast = _cast(name, annotation, value)
        cls(**{name: cast})
    except (ValueError, UsageError) as exc:
        raise UsageError(f"{variable}={value!r}: {exc}") from None
    return cast


@dataclasses.dataclass
class TritonSecurityConfig:
    """PyTriton 0.7's: the key (``access_token``) the server's ``restricted_endpoints`` take, in the header
    ``triton-access-token`` (PyTriton's, so its clients and repogen's commands both send it).

    ``restricted_endpoints`` are tritonserver's API groups: ``None`` is PyTriton's default set (shared-memory,
    model-repository, statistics, trace, logging), ``[]`` restricts nothing. A key is made when none is given and
    something is restricted; :meth:`Triton.get_access_token` returns it.
    """

    access_token: str | None = None
    restricted_endpoints: list[str] | None = None

    def __post_init__(self) -> None:
        if self.restricted_endpoints is None:
            self.restricted_endpoints = list(DEFAULT_RESTRICTED)
        unknown = sorted(set(self.restricted_endpoints) - set(APIS))
        if unknown:
            raise UsageError(
                f"TritonSecurityConfig(restricted_endpoints=...): {', '.join(map(repr, unknown))} is no endpoint "
                f"tritonserver restricts; valid endpoints are: {', '.join(sorted(APIS))}"
            )
        if self.access_token is None and self.restricted_endpoints:
            self.access_token = secrets.token_urlsafe(32)


@dataclasses.dataclass
class TritonLifecyclePolicy:
    """PyTriton's: when its server starts and where its model store is. :meth:`Triton.run` starts the server itself
    and builds its own repository, PyTriton's default; any other policy is refused, naming why."""

    launch_triton_on_startup: bool = True
    local_model_store: bool = False

    def check(self) -> None:
        if self.launch_triton_on_startup and not self.local_model_store:
            return
        raise UsageError(
            f"{self!r} cannot apply: it is PyTriton's Vertex AI mode (its server started later, from a model store "
            "PyTriton writes); Triton.run starts the server itself. To serve on Vertex AI, build the repository "
            "(repogen build server.py:triton -o DIR) and serve it with Vertex AI's Triton container"
        )
