"""Deployment files that verify a signed repository before tritonserver reads a byte of it.

The check is upstream's own CLI, ``model_signing verify key`` (OpenSSF Model Signing's reference
implementation), on the repository's root signature, which covers every file and every model directory's
signature: the cluster needs no repogen, and a refusal names each changed, missing and added file. It runs
from ``/opt/model-signing``, a tree installed with ``pip --target`` next to the image's Python, never into it
(the server's Python keeps numpy alone).

* Docker: a ``verify`` stage FROM the same image installs the verifier, copies the repository and the public
  key, and verifies; the final image copies ``/models`` (and the verifier, for init containers) from it.
  A repository that does not verify fails ``docker build``: no image holds unverified files.
* Kubernetes: an init container of the Deployment's image (one built that way) verifies ``/models``, the
  key mounted from a ConfigMap (or a Secret); a failure stops the pod before tritonserver starts, with the
  files in the init container's log.
* KServe: with ``--image``, the same init container. With a storage URI, the storage initializer KServe
  injects runs after the pod's own init containers (it is appended to them,
  pkg/webhook/admission/pod/storage_initializer_injector.go), so an init container would see nothing yet:
  an init container copies the verifier out of ``--verifier-image`` into a volume, and the stock runtime's
  container runs it on ``/mnt/models`` before it execs the runtime's own command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DeployError
from ..runtime.contract import SIGNATURE_FILE
from .build_context import context_path

if TYPE_CHECKING:
    from ..ondisk.reader import BuiltRepository

__all__ = [
    "VERIFIER_REQUIREMENTS",
    "VERIFY_KEY_FILE",
    "KeySource",
    "VerifyDeploy",
    "deploy_verification",
    "verify_key_in_context",
    "verify_note",
]

VERIFIER_REQUIREMENTS = ("model-signing==1.1.1", "pyOpenSSL==26.4.0")
"""What the images install to verify: the library repogen signs with (1.1.1 imports OpenSSL without depending on
pyOpenSSL, so it is named too). Pinned, so an image verifies with the version these files were tested with."""
VERIFIER_DIR = "/opt/model-signing"
KEY_DIR = "/etc/repogen/verify-key"
KEY_FILE = "key.pub"
KEY_VOLUME = "verify-key"
TOOLS_VOLUME = "model-signing"
ENTRYPOINT = "/opt/nvidia/nvidia_entrypoint.sh"
"""NVIDIA's entrypoint (banner, driver and shm checks), kept in front of a command repogen sets."""
VERIFY_KEY_FILE = "verify-key.pub"
"""The public key `deploy --docker --verify-key` writes beside the Dockerfile, for the verify stage to copy."""


def verify_command(repository: str, modelcar: bool = False) -> str:
    """The shell command that verifies ``repository`` (resolved first: upstream refuses a symlinked root).

    A modelcar's ``/mnt/models`` is a link to ``/proc/PID/root/models``: it is followed one step only, since
    ``readlink -f`` would also follow the magic ``/proc/PID/root`` link, to this container's own ``/``.
    """
    key = f"{KEY_DIR}/{KEY_FILE}"
    root = f"readlink {repository}" if modelcar else f"readlink -f {repository}"
    return (
        f'PYTHONPATH={VERIFIER_DIR} python3 -m model_signing verify key "$({root})" '
        f"--signature {repository}/{SIGNATURE_FILE} --public_key {key}"
    )


@dataclass(frozen=True)
class KeySource:
    """Where the public key comes from: a file (a ConfigMap made of it; Docker copies it) or an existing Secret."""

    path: Path | None = None
    secret: str | None = None

    @classmethod
    def of(cls, path: Path | None, secret: str | None) -> KeySource | None:
        if path is not None and secret is not None:
            raise DeployError(
                "--verify-key and --verify-key-secret both given; expected one: a public key file (written into a "
                "ConfigMap), or the name of a Secret holding it as key.pub."
            )
        if path is None and secret is None:
            return None
        if path is not None:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            if "-----BEGIN PUBLIC KEY-----" not in text:
                raise DeployError(
                    f"--verify-key {path} is not a PEM public key; expected the public key of the key that signed "
                    "(`openssl ec -in key.pem -pubout -out key.pub`), never the private key."
                )
        return cls(path, secret)

    def text(self) -> str:
        assert self.path is not None
        return self.path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class VerifyDeploy:
    """The pieces the Docker, Kubernetes and KServe writers add to verify before serving."""

    key: KeySource
    name: str

    # -- Docker -----------------------------------------------------------------------------------

    def docker_stage(self, repository: str, key_in_context: str) -> str:
        """The ``verify`` stage: install the verifier, copy the repository and key, verify."""
        requirements = " ".join(VERIFIER_REQUIREMENTS)
        return "\n".join(
            [
                "FROM ${TRITON_IMAGE} AS verify",
                "# OpenSSF Model Signing's verifier (PyPI's model-signing), beside the image's Python, not in it.",
                f"RUN python3 -m pip install --no-cache-dir --target {VERIFIER_DIR} {requirements}",
                f"COPY {key_in_context} {KEY_DIR}/{KEY_FILE}",
                f"COPY {repository} /models",
                "# Every file against the repository's signatures (model.sig): a changed, missing or added file",
                "# fails the build here, named, and no image holds it.",
                f"RUN {verify_command('/models')}",
                "",
            ]
        )

    def require_file(self, what: str) -> Path:
        if self.key.path is None:
            raise DeployError(
                f"{what} verifies with a public key file; expected --verify-key KEY.pub (--verify-key-secret names a "
                "Secret, which only a cluster can mount)."
            )
        return self.key.path

    # -- Kubernetes and KServe --------------------------------------------------------------------

    def config_map(self, labels: dict[str, str]) -> dict[str, Any] | None:
        if self.key.path is None:
            return None
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{self.name}-verify-key", "labels": labels},
            "data": {KEY_FILE: self.key.text()},
        }

    def key_volume(self) -> dict[str, Any]:
        if self.key.secret is not None:
            return {"name": KEY_VOLUME, "secret": {"secretName": self.key.secret}}
        return {"name": KEY_VOLUME, "configMap": {"name": f"{self.name}-verify-key"}}

    @staticmethod
    def key_mount() -> dict[str, Any]:
        return {"name": KEY_VOLUME, "mountPath": KEY_DIR, "readOnly": True}

    def init_container(self, image: str, security: dict[str, Any], repository: str = "/models") -> dict[str, Any]:
        """Verifies ``repository`` in ``image`` (one built by ``repogen deploy --docker --verify-key``)."""
        return {
            "name": "verify-models",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c", verify_command(repository)],
            "securityContext": security,
            "volumeMounts": [self.key_mount()],
        }

    def tools_init_container(self, image: str, security: dict[str, Any]) -> dict[str, Any]:
        """Copies the verifier out of ``image`` for a container whose image lacks it (KServe's stock runtime)."""
        return {
            "name": "model-signing-tools",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c", f"cp -R {VERIFIER_DIR}/. /tools/"],
            "securityContext": security,
            "volumeMounts": [{"name": TOOLS_VOLUME, "mountPath": "/tools"}],
        }

    @staticmethod
    def tools_volume() -> dict[str, Any]:
        return {"name": TOOLS_VOLUME, "emptyDir": {}}

    @staticmethod
    def tools_mount() -> dict[str, Any]:
        return {"name": TOOLS_VOLUME, "mountPath": VERIFIER_DIR, "readOnly": True}

    @staticmethod
    def wrapped_command(repository: str, modelcar: bool = False) -> list[str]:
        """Verify, then run the container's own command line (KServe appends the runtime's args after these)."""
        script = f'{verify_command(repository, modelcar)} && exec "$0" "$@"'
        return [ENTRYPOINT, "/bin/sh", "-c", script]


def verify_note(verify: VerifyDeploy | None) -> str:
    if verify is None:
        return ""
    return (
        "# Signatures verified before tritonserver starts (docs/security.md): the verifier comes from an image built\n"
        "# with `repogen deploy --docker --verify-key` (its /opt/model-signing).\n"
    )


def deploy_verification(info: BuiltRepository, key: KeySource, name: str) -> VerifyDeploy:
    """Signatures are verified where the repository is signed; an unsigned one is refused, nothing written."""
    from ..signing import is_signed  # the signing stack only where a key is given

    if not is_signed(info.path):
        raise DeployError(
            f"--verify-key: {info.path} is not signed (no model.sig), so a container would refuse it; nothing was "
            f"written. Sign it first: repogen sign {info.path} --key KEY.pem (or build with --sign-key KEY.pem)."
        )
    return VerifyDeploy(key, name)


def verify_key_in_context(verify: VerifyDeploy, app: str | None, context: Path, out_dir: Path | None) -> str:
    """Where the Dockerfile's verify stage copies the key from: written beside the Dockerfile, in the context."""
    verify.require_file("--docker --verify-key")
    if app:
        raise DeployError(
            f"--verify-key checks the repository built here against its signatures; --app {app} rebuilds an "
            "unsigned one inside the image. Leave --app out (the default copies the signed repository)."
        )
    if out_dir is None:
        raise DeployError(
            f"--docker --verify-key writes the public key beside the Dockerfile ({VERIFY_KEY_FILE}), inside the build "
            "context; expected -o DIR (under --context)."
        )
    return context_path(out_dir / VERIFY_KEY_FILE, context, "the deployment directory")
