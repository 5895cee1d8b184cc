"""Triton's restricted APIs: which API groups a key can guard, the header that carries it, which release can.

tritonserver guards an API group with a header/value pair given on its command line
(``--http-restricted-api=<apis>:<header>=<value>``, ``--grpc-restricted-protocol=<apis>:<header>=<value>``);
a request without the pair is refused, with 403 over HTTP and UNAVAILABLE over gRPC. repogen restricts,
by default, what PyTriton 0.7 restricts (its 0.7.0 breaking change): shared memory, the model
repository (index, load, unload), statistics, trace and logging settings, with PyTriton's header.
Health, metadata, model config and inference stay open.

Measured on 2.39.0, 2.41.0 and 2.51.0 (PyPI's wheels), read in the server's sources at v2.39.0-v2.71.0
and main (2.73.0dev):

* ``--grpc-restricted-protocol`` exists in every release repogen supports (2.39.0 = NGC 23.10 on);
  ``--http-restricted-api`` from 2.40.0 (NGC 23.11): 2.39.0 refuses it as an unrecognized option.
* Both flags split at the first ``:`` (API groups, comma-separated) and the first ``=`` after it. Their
  ``--help`` said ``<apis>,<key>=<value>`` until 2.6x; a comma there fails to parse.
* gRPC expects the header as ``triton-grpc-protocol-<header>`` (the server adds the prefix), HTTP as given.
* An API group named in two flags of one protocol stops the server at start (2.40+ parse the names and
  refuse an unknown one; 2.39's gRPC ignores an unknown name).
* Triton's metrics endpoint (``--metrics-port``) and gRPC's own ``grpc.health.v1`` service are not
  covered by any group: they stay open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .releases import Release

__all__ = [
    "APIS",
    "DEFAULT_RESTRICTED",
    "GRPC_HEADER_PREFIX",
    "GRPC_REFUSAL",
    "HEADER",
    "HTTP_FLAG",
    "HTTP_REFUSAL",
    "GRPC_FLAG",
    "PATHS",
    "PROTOCOL_NAMES",
    "first_http_release",
    "grpc_header",
    "header_for",
    "parse_apis",
    "restriction_args",
    "restricts_grpc",
    "restricts_http",
]

APIS: tuple[str, ...] = (
    "health", "metadata", "inference", "shared-memory", "model-config", "model-repository", "statistics", "trace",
    "logging",
)  # fmt: skip
"""tritonserver's API groups (``RESTRICTED_CATEGORY_NAMES``, unchanged from 2.40 to 2.73), in its order."""

DEFAULT_RESTRICTED: tuple[str, ...] = ("shared-memory", "model-repository", "statistics", "trace", "logging")
"""PyTriton 0.7.0's ``DEFAULT_PROTECTED_ENDPOINTS``: what needs the key unless the user chooses otherwise."""

HEADER = "triton-access-token"
"""PyTriton 0.7's header name (``TRITON_ACCESS_HEADER``): its clients and repogen's interoperate."""
GRPC_HEADER_PREFIX = "triton-grpc-protocol-"
"""What tritonserver puts before the header name of ``--grpc-restricted-protocol`` (grpc_server.h)."""

PROTOCOL_NAMES = {"http": "HTTP", "grpc": "gRPC"}
HTTP_FLAG = "--http-restricted-api"
GRPC_FLAG = "--grpc-restricted-protocol"
_HTTP_FROM = (2, 40, 0)  # v2.40.0's command_line_parser.cc adds OPTION_HTTP_RESTRICTED_API
_GRPC_FROM = (2, 39, 0)  # already in v2.39.0, the oldest release repogen supports

HTTP_REFUSAL = "This API is restricted, expecting header"
"""How HTTP refuses a request without the key (403, ``{"error": "This API is restricted, expecting header '...'"}``)."""
GRPC_REFUSAL = "This protocol is restricted, expecting header"
"""How gRPC refuses it (status UNAVAILABLE)."""

PATHS: dict[str, tuple[str, ...]] = {
    "health": ("GET /v2/health/live", "GET /v2/health/ready", "GET /v2/models/<m>/ready"),
    "metadata": ("GET /v2", "GET /v2/models/<m>"),
    "inference": ("POST /v2/models/<m>/infer", "POST /v2/models/<m>/generate[_stream]"),
    "shared-memory": ("/v2/systemsharedmemory/...", "/v2/cudasharedmemory/..."),
    "model-config": ("GET /v2/models/<m>/config",),
    "model-repository": ("POST /v2/repository/index", "POST /v2/repository/models/<m>/load|unload"),
    "statistics": ("GET /v2/models[/<m>]/stats",),
    "trace": ("GET|POST /v2/[models/<m>/]trace/setting",),
    "logging": ("GET|POST /v2/logging",),
}
"""The HTTP endpoints of each group (http_server.cc), for the docs and for error messages."""


def restricts_http(version: tuple[int, ...]) -> bool:
    """Whether tritonserver ``version`` (``Release.version``) has ``--http-restricted-api``."""
    return version >= _HTTP_FROM


def restricts_grpc(version: tuple[int, ...]) -> bool:
    return version >= _GRPC_FROM


def first_http_release() -> Release:
    """The release that first restricts HTTP APIs: tritonserver 2.40.0 (NGC 23.11)."""
    from .releases import get_release  # the release table, only here: `repogen infer` needs none of it

    return get_release(".".join(str(part) for part in _HTTP_FROM))


def grpc_header(header: str = HEADER) -> str:
    """The gRPC metadata key a client sends: ``triton-grpc-protocol-triton-access-token``."""
    return GRPC_HEADER_PREFIX + header


def header_for(protocol: str) -> str:
    """The header a client of ``protocol`` (``http``/``grpc``) sends the key in."""
    return grpc_header() if protocol == "grpc" else HEADER


def parse_apis(text: str | Iterable[str]) -> tuple[str, ...]:
    """``--restrict``'s value: API groups, ``default`` (PyTriton 0.7's set), ``all`` or ``none``; comma-separated.

    Returned in tritonserver's order, each once; ``()`` means nothing is restricted. Raises ``ValueError``
    naming the unknown names and the known ones.
    """
    words = [w.strip() for part in ([text] if isinstance(text, str) else text) for w in part.split(",") if w.strip()]
    if words == ["none"]:
        return ()
    chosen: set[str] = set()
    unknown = []
    for word in words:
        if word == "default":
            chosen.update(DEFAULT_RESTRICTED)
        elif word == "all":
            chosen.update(APIS)
        elif word in APIS:
            chosen.add(word)
        else:
            unknown.append(word)
    if unknown or not words:
        raise ValueError(
            f"{', '.join(map(repr, unknown)) or 'nothing'}: expected tritonserver's API groups ({', '.join(APIS)}), "
            f"'default' ({','.join(DEFAULT_RESTRICTED)}), 'all' or 'none', comma-separated"
        )
    return tuple(api for api in APIS if api in chosen)


def restriction_args(apis: Sequence[str], value: str, *, http: bool, grpc: bool, header: str = HEADER) -> list[str]:
    """tritonserver's flags restricting ``apis`` to requests whose ``header`` carries ``value``.

    ``value`` is the key, or how the process that starts tritonserver spells it (``${REPOGEN_ACCESS_TOKEN}``
    for a shell, ``$(REPOGEN_ACCESS_TOKEN)`` for Kubernetes); ``http``/``grpc`` say which flags the release has.
    """
    if not apis:
        return []
    setting = f"{','.join(apis)}:{header}={value}"
    return [flag + "=" + setting for flag, wanted in ((HTTP_FLAG, http), (GRPC_FLAG, grpc)) if wanted]
