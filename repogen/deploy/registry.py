"""``repogen push``: a repository's OCI image sent to a registry through oras-py (ORAS's SDK), the manifest last.

The distribution protocol is oras-py's: blob uploads, the token and basic auth dance, Docker's ``config.json``
credentials (``auths``, ``credHelpers``, ``credsStore``). The blobs go first and the manifest, which the tag
names, last: an interrupted push leaves blobs no tag reaches, never a tag naming missing blobs. The manifest is
sent as the exact bytes the image's digest is of, and the registry's ``Docker-Content-Digest`` must agree.
oras-py is the ``oci`` extra (``pip install 'triton-repogen[oci]'``): building never talks to a registry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DeployError
from ..ondisk.reader import require_directory
from .images import ImageOptions, check_repository, temporary_image
from .oci_image import MEDIA_MANIFEST, Descriptor, OciImage
from .oci_shell import find_shell

__all__ = ["PushOptions", "Pushed", "Reference", "push_image", "push_repository"]

_REFERENCE = re.compile(
    r"^(?P<registry>[a-zA-Z0-9.-]+(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?)/"
    r"(?P<name>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$"
)
"""REGISTRY/NAME:TAG as the distribution spec spells a name and a tag (a registry named, never guessed)."""
_EXTRA = "pip install 'triton-repogen[oci]' (oras-py)"


@dataclass(frozen=True)
class Reference:
    registry: str
    name: str
    tag: str

    def __str__(self) -> str:
        return f"{self.registry}/{self.name}:{self.tag}"

    @classmethod
    def parse(cls, text: str) -> Reference:
        found = _REFERENCE.match(text)
        if not found or ("." not in found["registry"] and ":" not in found["registry"] and
                         found["registry"] != "localhost"):  # fmt: skip
            raise DeployError(
                f"{text!r} is not REGISTRY/NAME:TAG; expected a registry host, a lower-case name and a tag, e.g. "
                "localhost:5000/quickstart:1 or ghcr.io/me/quickstart:1.0 (Docker Hub: docker.io/me/quickstart:1)"
            )
        registry = "registry-1.docker.io" if found["registry"] == "docker.io" else found["registry"]
        return cls(registry, found["name"], found["tag"])


@dataclass(frozen=True)
class PushOptions:
    image: ImageOptions = ImageOptions()
    insecure: bool = False
    """Plain HTTP, for a registry that has no TLS (localhost:5000); never the default."""
    docker_config: Path | None = None
    """The directory of Docker's config.json (default: $DOCKER_CONFIG, else ~/.docker), as `docker --config` has it."""
    username: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class Pushed:
    reference: Reference
    digest: str
    image: OciImage
    uploaded: int
    """Blobs sent; the others were in the registry already."""

    def line(self) -> str:
        return f"{self.reference}@{self.digest}"


def _oras() -> ModuleType:
    try:
        import oras.provider
    except ImportError:
        raise DeployError(f"repogen push needs oras-py, the OCI registry client: {_EXTRA}") from None
    return oras.provider


def _registry(reference: Reference, options: PushOptions, backend: str) -> Any:
    """oras-py's client with the credentials: given, else Docker's config.json (``auths``, helpers, stores)."""
    provider = _oras()
    registry = provider.Registry(hostname=reference.registry, insecure=options.insecure, auth_backend=backend)
    if options.username is not None:
        registry.auth.set_basic_auth(options.username, options.password or "")
        return registry
    folder = options.docker_config or Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    config = folder / "config.json"
    if config.is_file():
        registry.auth.load_configs(registry.get_container(str(reference)), configs=[str(config)])
    if backend == "basic" and not getattr(registry.auth, "_basic_auth", None):  # oras-py would fail on the first 401
        raise DeployError(
            f"registry {reference.registry} asks for a login (HTTP Basic) and {config} holds none for it, so nothing "
            f"was pushed to {reference}: unauthorised; log in first (`docker login {reference.registry}`), or pass "
            "--username and --password-stdin"
        )
    return registry


def _fail(reference: Reference, what: str, status: int, body: str) -> DeployError:
    """A registry's refusal, named and with its fix (the distribution spec's error codes)."""
    codes = set(re.findall(r'"code"\s*:\s*"([A-Z_]+)"', body))
    where = f"registry {reference.registry} refused {what} for {reference}"
    if status in (401, 403) or {"UNAUTHORIZED", "DENIED"} & codes:
        fix = (f"log in first (`docker login {reference.registry}`, which repogen reads from config.json), or pass "
               "--username and --password-stdin; check that the account may push to this name")  # fmt: skip
        return DeployError(f"{where}: unauthorised (HTTP {status}); {fix}")
    if "NAME_UNKNOWN" in codes or status == 404:
        return DeployError(f"{where}: name unknown (HTTP {status}); create the repository {reference.name} in the "
                           "registry (some registries do not create one on push), or check its spelling")  # fmt: skip
    if {"DIGEST_INVALID", "SIZE_INVALID", "MANIFEST_BLOB_UNKNOWN", "BLOB_UNKNOWN"} & codes:
        return DeployError(f"{where}: digest mismatch ({', '.join(sorted(codes))}): what arrived is not what was "
                           "sent; push again, and check any proxy between here and the registry")  # fmt: skip
    return DeployError(f"{where}: HTTP {status} {body[:300]}")


def _call(reference: Reference, insecure: bool, what: str, send: Any) -> Any:
    """``send()`` with transport failures turned into errors naming the registry and the fix."""
    import requests  # oras-py's HTTP client

    try:
        return send()
    except requests.exceptions.SSLError as exc:
        raise DeployError(
            f"registry {reference.registry}: no TLS handshake while sending {what} for {reference} "
            f"({exc.__class__.__name__}); a registry that speaks plain HTTP (localhost:5000) needs --insecure, and "
            "one with its own CA needs that CA in the system's trust store"
        ) from None
    except requests.exceptions.ConnectionError:
        scheme = "http" if insecure else "https"
        raise DeployError(
            f"registry {reference.registry} is unreachable ({scheme}://{reference.registry}/v2/) while sending {what} "
            f"for {reference}; check the host and port, that the registry runs, and any proxy"
        ) from None
    except ValueError as exc:  # oras-py: "Cannot respond to request for authentication."
        raise _fail(reference, what, 401, str(exc)) from None


def _auth_backend(reference: Reference, insecure: bool) -> str:
    """One GET of the API's root before anything is built (oras-py retries a request that fails to connect for over
    two minutes: right for a flaky network, not for a wrong port); its challenge picks oras-py's auth backend: a
    ``Basic`` realm (distribution's htpasswd, some Nexus and Artifactory setups) is not a token service."""
    _oras()
    import requests  # oras-py's HTTP client

    url = f"{'http' if insecure else 'https'}://{reference.registry}/v2/"
    answer = _call(reference, insecure, "its first request", lambda: requests.get(url, timeout=30))
    challenge = answer.headers.get("WWW-Authenticate", "")
    return "basic" if challenge.lower().startswith("basic") else "token"


def _upload(registry: Any, reference: Reference, image: OciImage, blob: Descriptor, insecure: bool) -> bool:
    """One blob; False where the registry had it already."""
    container = registry.get_container(str(reference))
    what = f"blob {blob.digest}"
    if _call(reference, insecure, what, lambda: registry.blob_exists(blob.json(), container)):
        return False
    response = _call(reference, insecure, what, lambda: registry.put_upload(str(image.blob(blob.digest)), container,
                                                                             blob.json()))  # fmt: skip
    if response.status_code not in (200, 201, 202):
        raise _fail(reference, what, response.status_code, response.text)
    return True


def _put_manifest(registry: Any, reference: Reference, image: OciImage, insecure: bool) -> None:
    container = registry.get_container(str(reference))
    url = f"{registry.prefix}://{container.manifest_url(reference.tag)}"
    data = image.blob(image.digest).read_bytes()
    response = _call(reference, insecure, "the manifest", lambda: registry.do_request(
        url, "PUT", data=data, headers={"Content-Type": MEDIA_MANIFEST}))  # fmt: skip
    if response.status_code not in (200, 201, 202):
        raise _fail(reference, "the manifest", response.status_code, response.text)
    said = response.headers.get("Docker-Content-Digest")
    if said and said != image.digest:
        raise DeployError(
            f"registry {reference.registry} stored the manifest of {reference} as {said}, but it is {image.digest}: "
            "digest mismatch; push again, and check any proxy between here and the registry"
        )


def push_image(image: OciImage, target: str, options: PushOptions) -> Pushed:
    """Push an image already made (an OCI layout directory) as ``target``: the blobs, then the manifest."""
    reference = Reference.parse(target)
    registry = _registry(reference, options, _auth_backend(reference, options.insecure))
    uploaded = sum(_upload(registry, reference, image, blob, options.insecure) for blob in image.blobs()[:-1])
    _put_manifest(registry, reference, image, options.insecure)
    return Pushed(reference, image.digest, image, uploaded)


def push_repository(repository: str | Path, target: str, options: PushOptions) -> Pushed:
    """Check and image ``repository``, then push it as ``target``; nothing is sent for a refused repository (the
    registry is only asked whether it is there)."""
    reference = Reference.parse(target)
    root = require_directory(repository)
    find_shell(options.image.shell)
    signatures = check_repository(root, options.image.verify_key)
    _auth_backend(reference, options.insecure)
    with temporary_image(root, options.image, signatures) as image:
        return push_image(image, target, options)
