"""The one door to PyPI's ``model-signing``, the OpenSSF Model Signing (OMS) reference implementation.

repogen writes no signature format of its own: a signature is the library's Sigstore bundle (a DSSE
envelope around an in-toto statement listing every file's sha256), so upstream's ``model_signing
verify`` checks what repogen signs, and repogen checks what upstream signs. Signing and hashing go
through the library's public configs (``signing.Config``, ``hashing.Config``). Verifying does the
two steps of ``verifying.Config.verify`` one at a time, because the public call answers only
"mismatch": the configured verifier checks the bundle and returns the statement's files (the one use
of the config's private ``_verifier``), and the library hashes the directory; the caller compares
them, so it can name every changed, missing and added file.

The library is an optional extra (``triton-repogen[signing]``): it is imported here only, when a
signature is asked for, and its absence is an error naming the extra, never a skipped signature.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import SigningError
from ..runtime.contract import SIGNATURE_FILE

EXTRA = "signing"
INSTALL = "pip install 'triton-repogen[signing]'"
KEY_HELP = (
    "an EC private key in PEM (P-256, P-384 or P-521): `openssl ecparam -name prime256v1 -genkey -noout -out key.pem`,"
    " and its public key for verifiers: `openssl ec -in key.pem -pubout -out key.pub`"
)


def library() -> ModuleType:
    """``model_signing`` with its signing, verifying and hashing modules loaded, or the error naming the extra."""
    try:
        import model_signing
        import model_signing.hashing
        import model_signing.signing
        import model_signing.verifying
    except ImportError as exc:  # the library, or pyOpenSSL, which it imports without depending on it
        raise SigningError(
            f"signatures need the '{EXTRA}' extra (model-signing and pyOpenSSL), which this Python lacks "
            f"({type(exc).__name__}: {exc}); install it: {INSTALL}"
        ) from None
    return model_signing


@dataclasses.dataclass(frozen=True)
class SignWith:
    """How to sign: an EC key offline (the default), a key with its certificate chain, or Sigstore keyless."""

    key: Path | None = None
    password: str | None = None
    certificate: Path | None = None
    chain: tuple[Path, ...] = ()
    sigstore: bool = False
    identity_token: str | None = None
    staging: bool = False

    def describe(self) -> str:
        if self.sigstore:
            return "Sigstore (keyless)"
        if self.certificate is not None:
            return f"key {self.key} with certificate {self.certificate}"
        return f"key {self.key}"

    def _config(self, ms: ModuleType) -> Any:
        config = ms.signing.Config()
        if self.sigstore:
            return config.use_sigstore_signer(identity_token=self.identity_token, use_staging=self.staging)
        if self.key is None:
            raise SigningError(f"no signing key given; expected {KEY_HELP}")
        _readable(self.key, "signing key")
        if self.certificate is not None:
            _readable(self.certificate, "signing certificate")
            return config.use_certificate_signer(
                private_key=self.key, signing_certificate=self.certificate, certificate_chain=list(self.chain)
            )
        return config.use_elliptic_key_signer(private_key=self.key, password=self.password)


@dataclasses.dataclass(frozen=True)
class VerifyWith:
    """What a signature must check against: an EC public key, a certificate chain, or a Sigstore identity."""

    key: Path | None = None
    chain: tuple[Path, ...] = ()
    certificate: bool = False
    identity: str | None = None
    issuer: str | None = None
    staging: bool = False

    def describe(self) -> str:
        if self.identity:
            return f"Sigstore identity {self.identity} ({self.issuer})"
        if self.certificate:
            return f"certificate chain {', '.join(map(str, self.chain)) or '(the system roots)'}"
        digest = fingerprint(self.key) if self.key is not None else ""
        return f"key {self.key}" + (f" (sha256 {digest[:16]})" if digest else "")

    def _config(self, ms: ModuleType) -> Any:
        config = ms.verifying.Config()
        if self.identity:
            if not self.issuer:
                raise SigningError("a Sigstore identity needs its OIDC issuer (e.g. https://github.com/login/oauth)")
            return config.use_sigstore_verifier(
                identity=self.identity, oidc_issuer=self.issuer, use_staging=self.staging
            )
        if self.certificate:
            return config.use_certificate_verifier(certificate_chain=list(self.chain))
        if self.key is None:
            raise SigningError("no public key given to verify with; expected the PEM public key of the signing key")
        _readable(self.key, "public key")
        try:
            return config.use_elliptic_key_verifier(public_key=self.key)
        except Exception as exc:  # noqa: BLE001 - not PEM, a private key, not EC (ValueError, AttributeError)
            raise SigningError(
                f"public key {self.key} cannot be used ({str(exc) or type(exc).__name__}); expected the PEM public key "
                "(P-256, P-384 or P-521) of the key that signed: `openssl ec -in key.pem -pubout -out key.pub`"
            ) from None

    def check(self) -> None:
        """Fail now, naming the key, where it cannot verify anything (before a repository is hashed)."""
        self._config(library())


def _readable(path: Path, what: str) -> None:
    if not path.is_file():
        raise SigningError(f"{what} {path} is not a file; expected {KEY_HELP}")


def fingerprint(public_key: Path) -> str:
    """The sha256 of the PEM public key as the library's bundles record it (their key hint); "" if unreadable."""
    try:
        from cryptography.hazmat.primitives import serialization

        key = serialization.load_pem_public_key(public_key.read_bytes())
    except (ImportError, OSError, ValueError, TypeError):
        return ""
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(pem).hexdigest()


def _hashing(ms: ModuleType, ignore: list[str], *, git: bool) -> Any:
    return ms.hashing.Config().set_ignored_paths(paths=ignore, ignore_git_paths=git).set_allow_symlinks(False)


def sign_directory(directory: Path, method: SignWith) -> Path:
    """Write ``directory/model.sig`` over every file of ``directory`` but itself; the directory is one OMS unit.

    As upstream's CLI does, the signature's own path is an ignored path (the library, used directly, would
    hash a previous signature into the new one) and git's files are left out. Written beside and renamed,
    so a reader never sees half a signature.
    """
    ms = library()
    final = directory / SIGNATURE_FILE
    fd, staged = tempfile.mkstemp(prefix=f".{SIGNATURE_FILE}.", dir=directory)
    os.close(fd)
    try:
        os.unlink(staged)  # the library hashes first, then writes: the name must not exist while it hashes
        config = method._config(ms).set_hashing_config(_hashing(ms, [SIGNATURE_FILE], git=True))
        config.sign(directory, staged)
        os.chmod(staged, 0o644)
        os.replace(staged, final)
    except SigningError:
        raise
    except Exception as exc:  # noqa: BLE001 - an unusable key (ValueError, TypeError; AttributeError for RSA), a symlink
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, AttributeError):
            reason = "not an EC key"
        raise SigningError(f"cannot sign {directory} with {method.describe()}: {reason}; expected {KEY_HELP}") from None
    finally:
        if os.path.exists(staged):
            os.unlink(staged)
    return final


def hash_files(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (relative POSIX path -> sha256), hashed by the library as it verifies.

    Nothing is left out, git's files included: what a signature does not cover is reported, not skipped. A
    symlink (which signatures refuse) or a special file is an error naming it.
    """
    ms = library()
    try:
        manifest = _hashing(ms, [], git=False).hash(directory)
    except ValueError as exc:
        raise SigningError(
            f"cannot check {directory}: {exc} Signatures cover regular files only; replace the link by the file"
        ) from None
    return {rd.identifier: rd.digest.digest_hex for rd in manifest.resource_descriptors()}


@dataclasses.dataclass(frozen=True)
class Signed:
    """What a valid signature covers: file -> sha256, and the paths its statement says were left out."""

    files: dict[str, str]
    ignored: tuple[str, ...]


class BadSignature(Exception):
    """The bundle does not check against the key (another key, a changed statement, not a bundle)."""


def signed_files(signature: Path, method: VerifyWith) -> Signed:
    """Check ``signature``'s bundle against ``method`` and return the files its statement lists."""
    ms = library()
    config = method._config(ms)
    from model_signing._signing import sign_sigstore, sign_sigstore_pb

    reader = sign_sigstore if config._uses_sigstore else sign_sigstore_pb
    try:
        bundle = reader.Signature.read(signature)
        manifest = config._verifier.verify(bundle)
    except Exception as exc:  # noqa: BLE001 - the library raises ValueError, KeyError, cryptography's errors...
        reason = str(exc).strip() or type(exc).__name__
        if type(exc).__name__ == "InvalidSignature":
            reason = "the signature does not match its statement (made by another key, or edited)"
        raise BadSignature(reason) from None
    serialization = manifest.serialization_type
    how = (serialization.get("method"), serialization.get("hash_type"))
    if how != ("files", "sha256"):
        raise SigningError(
            f"{signature} is valid but hashes the files as {how[0]}/{how[1]}, and repogen compares sha256 per file "
            f"(what it signs); check it with upstream's CLI: model_signing verify ... {signature.parent}"
        )
    return Signed(
        files={rd.identifier: rd.digest.digest_hex for rd in manifest.resource_descriptors()},
        ignored=tuple(str(p) for p in serialization.get("ignore_paths", ())),
    )
