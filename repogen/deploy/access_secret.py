"""How a deployed server gets its access key: never written into a file repogen generates or into an image.

The server reads the key from ``$REPOGEN_ACCESS_TOKEN``, which the container is given at run time:
``docker run -e``, or a Kubernetes Secret the Deployment (or KServe predictor) references. tritonserver
takes the key only on its command line, so the command expands the variable where the container starts:
``sh -c`` in the Dockerfile's ``CMD`` (refusing to start without it), ``$(VAR)`` in Kubernetes ``args``
(a missing Secret keeps the pod from starting). Which flags a release has is :mod:`repogen.triton.restricted_apis`'s.
"""

from __future__ import annotations

import shlex
import textwrap
from typing import Any

from ..errors import UsageError
from ..server.client.access_key import ENV
from ..triton.releases import Release
from ..triton.restricted_apis import HEADER, first_http_release, restriction_args, restricts_http

__all__ = [
    "ENV",
    "SECRET_KEY",
    "check_release",
    "docker_cmd",
    "docker_note",
    "kubernetes_args",
    "kubernetes_env",
    "manifest_note",
    "needs_key",
    "probe_key_args",
    "secret_command",
    "secret_name",
]

SECRET_KEY = "token"
"""The key inside the Secret that holds the access key."""
_NEW_KEY = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
_MISSING = (
    f"the restricted APIs need a key: docker run -e {ENV}=KEY ... (repogen deploy --restrict none: every API open)"
)


def check_release(target: Release, apis: tuple[str, ...]) -> None:
    """Refuse a target whose tritonserver cannot keep its HTTP APIs behind the key (2.39: gRPC only)."""
    if apis and not restricts_http(target.version):
        first = first_http_release()
        raise UsageError(
            f"{target.label} cannot keep its HTTP APIs behind a key (--http-restricted-api came with {first.label}), "
            f"so {', '.join(apis)} would answer anyone over HTTP; nothing was written. Deploy on --triton-release "
            f"{first.ngc} or later, or pass --restrict none to deploy with every API open."
        )


def _flags(target: Release, apis: tuple[str, ...], value: str) -> list[str]:
    return restriction_args(apis, value, http=restricts_http(target.version), grpc=True)


def docker_cmd(target: Release, apis: tuple[str, ...], command: list[str]) -> list[str]:
    """The Dockerfile's ``CMD``: ``command`` as it is when nothing is restricted, else through ``sh -c``, which
    puts ``$REPOGEN_ACCESS_TOKEN`` into the flags and exits (2) without starting the server when it is unset."""
    if not apis:
        return command
    flags = _flags(target, apis, f"${{{ENV}}}")
    line = " ".join([shlex.join(command), *(f'"{flag}"' for flag in flags)])
    return ["/bin/sh", "-c", f': "${{{ENV}:?{_MISSING}}}"; exec {line}']


def _comment(text: str) -> str:
    return "\n".join(textwrap.wrap(text, 110, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False))


def docker_note(apis: tuple[str, ...]) -> str:
    """The Dockerfile's comment on what answers without the key and how the container gets it."""
    if not apis:
        return _comment("Nothing is restricted (--restrict none): every API answers whoever reaches the ports.")
    return _comment(
        f"The {', '.join(apis)} APIs answer only requests whose {HEADER} header carries the key in ${ENV}, "
        f"which `docker run -e {ENV}` gives the container (never the image): without it the server does not "
        f"start. A key: {_NEW_KEY} (docs/security.md)."
    )


def secret_name(name: str, given: str | None) -> str:
    return given or f"{name}-access-token"


def kubernetes_env(secret: str) -> list[dict[str, Any]]:
    """The container's ``env``: the key from the Secret (``kubectl create secret generic ...``)."""
    return [{"name": ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": SECRET_KEY}}}]


def kubernetes_args(target: Release, apis: tuple[str, ...]) -> list[str]:
    """tritonserver's restriction flags, the key as ``$(REPOGEN_ACCESS_TOKEN)``: Kubernetes expands it from ``env``."""
    return _flags(target, apis, f"$({ENV})")


def needs_key(apis: tuple[str, ...], *groups: str) -> bool:
    """Whether a probe of ``groups`` (``inference``, ``health``) must send the key."""
    return any(group in apis for group in groups)


def secret_command(secret: str) -> str:
    """How to create the Secret, for the manifest's header."""
    return f'kubectl create secret generic {secret} --from-literal={SECRET_KEY}="$({_NEW_KEY})"'


def manifest_note(apis: tuple[str, ...], secret: str) -> str:
    """The manifest header's lines on the key."""
    if not apis:
        return _comment("Nothing is restricted (--restrict none): every API answers whoever reaches the Service.")
    text = _comment(
        f"The {', '.join(apis)} APIs answer only requests whose {HEADER} header carries the key in Secret {secret} "
        f"(under {SECRET_KEY!r}); the pod does not start without it. Create it first:"
    )
    return f"{text}\n#   {secret_command(secret)}"


def probe_key_args(apis: tuple[str, ...], *groups: str) -> list[str]:
    """What the probe command adds to send the key (probe_check.py: header, environment variable)."""
    return [HEADER, ENV] if needs_key(apis, *groups) else []
