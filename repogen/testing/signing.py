"""Keys, signed builds and the tamper matrix that the signing tests run through repogen's and upstream's verifiers.

``ec_key(directory, curve)`` writes a fresh EC key pair (PEM) as ``openssl ecparam`` would. ``TAMPERS`` are
the ways a signed repository is changed after the build, each applied to a copy: a payload byte, a
``config.pbtxt``, a file added to a version directory, a file removed, a shipped package's ``.py``
replaced, a package tree swapped for another version's, the whole repository re-signed with another key,
and an older build's signatures laid over new files. ``upstream_verify`` runs upstream's own CLI,
``model_signing verify key``, as a user would.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..ondisk.integrity import is_signature
from ..runtime.contract import CONFIG_FILE, MODEL_FILE, PAYLOAD_FILE, SIGNATURE_FILE

__all__ = ["TAMPERS", "KeyPair", "Tamper", "copy_repository", "ec_key", "swap_signatures", "upstream_verify"]


@dataclasses.dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path


def ec_key(directory: Path, name: str = "key", curve: str = "secp256r1") -> KeyPair:
    """A new EC key (``secp256r1``, ``secp384r1``, ``secp521r1``) and its public key, PEM files in ``directory``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(getattr(ec, curve.upper())())
    private, public = directory / f"{name}.pem", directory / f"{name}.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return KeyPair(private, public)


def copy_repository(source: Path, destination: Path) -> Path:
    """A copy with its own files (no hard links into the wheel cache), so a tamper never reaches the cache."""
    shutil.copytree(source, destination, symlinks=True)
    return destination


def swap_signatures(signed: Path, target: Path) -> None:
    """Put every signature of ``signed`` over ``target``'s files (an older build's signatures on a newer one)."""
    for folder, _, names in os.walk(signed):
        for name in names:
            relative = (Path(folder) / name).relative_to(signed).as_posix()
            if is_signature(relative):
                shutil.copyfile(Path(folder) / name, target / relative)


def upstream_verify(directory: Path, public_key: Path) -> subprocess.CompletedProcess[str]:
    """``model_signing verify key DIR --signature DIR/model.sig --public_key PUB``: upstream's CLI, unchanged."""
    cmd = [sys.executable, "-m", "model_signing", "verify", "key", str(directory)]
    cmd += ["--signature", str(directory / SIGNATURE_FILE), "--public_key", str(public_key)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@dataclasses.dataclass(frozen=True)
class Tamper:
    """One change to a signed repository; ``apply(repository, model, context)`` returns the path it names."""

    name: str
    apply: Callable[[Path, str, dict[str, object]], str]
    needs_packages: bool = False


def _payload(repo: Path, model: str, context: dict[str, object]) -> str:
    path = repo / model / "1" / PAYLOAD_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return f"{model}/1/{PAYLOAD_FILE}"


def _config(repo: Path, model: str, context: dict[str, object]) -> str:
    path = repo / model / CONFIG_FILE
    path.write_text(path.read_text(encoding="utf-8").replace("max_batch_size: ", "max_batch_size: 1", 1))
    return f"{model}/{CONFIG_FILE}"


def _added(repo: Path, model: str, context: dict[str, object]) -> str:
    (repo / model / "1" / "sitecustomize.py").write_text("import os\n")
    return f"{model}/1/sitecustomize.py"


def _removed(repo: Path, model: str, context: dict[str, object]) -> str:
    (repo / model / "1" / MODEL_FILE).unlink()
    return f"{model}/1/{MODEL_FILE}"


def _package_source(repo: Path, model: str, context: dict[str, object]) -> str:
    relative = f"{model}/1/packages/cp310-x86_64/yaml/__init__.py"
    path = repo / relative
    path.chmod(0o644)
    path.write_text(path.read_text(encoding="utf-8") + "\nimport os  # replaced after the build\n")
    return relative


def _package_tree(repo: Path, model: str, context: dict[str, object]) -> str:
    """The cp310 tree replaced by another PyYAML version's wheel (``context['other_wheel']``), unpacked."""
    tree = repo / model / "1" / "packages" / "cp310-x86_64"
    shutil.rmtree(tree)
    tree.mkdir()
    with zipfile.ZipFile(str(context["other_wheel"])) as wheel:
        wheel.extractall(tree)
    return f"{model}/1/packages/cp310-x86_64/yaml/__init__.py"


def _other_key(repo: Path, model: str, context: dict[str, object]) -> str:
    from ..signing import SignWith, sign_repository

    other = context["other_key"]
    assert isinstance(other, KeyPair)
    _config(repo, model, context)  # what another key's holder would do: change files, then sign them
    sign_repository(repo, SignWith(key=other.private))
    return SIGNATURE_FILE


def _older_signatures(repo: Path, model: str, context: dict[str, object]) -> str:
    """``repo``, signed, gets the newer build's files (``context['newer']``) under its own signatures."""
    newer = context["newer"]
    assert isinstance(newer, Path)
    kept = repo.with_name(repo.name + "-signatures")
    copy_repository(repo, kept)
    shutil.rmtree(repo)
    copy_repository(newer, repo)
    swap_signatures(kept, repo)
    shutil.rmtree(kept)
    return f"{model}/1/sources/"


TAMPERS = (
    Tamper("a payload byte changed", _payload),
    Tamper("a config.pbtxt changed", _config),
    Tamper("a file added to a version directory", _added),
    Tamper("a file removed", _removed),
    Tamper("a shipped package's .py replaced", _package_source, needs_packages=True),
    Tamper("a wheel tree swapped for another version", _package_tree, needs_packages=True),
    Tamper("the signature of another key", _other_key),
    Tamper("an older build's signature over new files", _older_signatures),
)
