"""Which directories of a repository are signed, and checking all of them in one pass over its files.

OMS signs a directory as one unit, and a signed tree's subdirectory cannot be verified alone. Triton, object
storage and KServe's storage initializer take a repository model directory by model directory, and a whole
repository is what ``docker build``, a PVC or a tarball carries. So every directory at the root (a model to
Triton) gets its own ``model.sig``, and the root gets one over everything, the model signatures included:
a model directory copied alone verifies alone; a whole repository verifies whole, and also proves that no
model directory was added, removed or had its signature replaced. Each is a plain OMS signature that
``model_signing verify key DIR --signature DIR/model.sig`` accepts.

Checking hashes every file once (the library's hashing, symlinks refused, nothing skipped) and compares each
signature's statement with its part of the tree: every changed, missing and added file is named, with the
signatures that say so, rather than one "mismatch".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from ..errors import SigningError, VerificationError
from ..runtime.contract import CONFIG_FILE, SIGNATURE_FILE
from .oms import BadSignature, SignWith, VerifyWith, hash_files, sign_directory, signed_files

Kind = Literal["changed", "missing", "added", "invalid"]
_ORDER: dict[str, int] = {"invalid": 0, "changed": 1, "missing": 2, "added": 3}
_LABELS = {
    "invalid": "bad signature",
    "changed": "changed",
    "missing": "missing",
    "added": "added",
}


def model_directories(root: Path) -> list[str]:
    """The directories at the root: each is a model to Triton, hidden ones too, so each is signed."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def is_model_directory(path: Path) -> bool:
    return (path / CONFIG_FILE).is_file()


def is_signed(root: Path) -> bool:
    return (root / SIGNATURE_FILE).is_file()


def sign_repository(root: Path, method: SignWith, models: Iterable[str] | None = None) -> list[str]:
    """Sign each model directory (only ``models`` and those without a signature, when given), then the root.

    Returns the model directories signed. A model directory alone (its ``config.pbtxt`` at ``root``) is
    one unit and signed as such.
    """
    root = Path(os.path.realpath(root))
    if not root.is_dir():
        raise SigningError(f"{root} is not a directory; expected a model repository (or one model directory)")
    signed: list[str] = []
    if not is_model_directory(root):
        wanted = None if models is None else set(models)
        for name in model_directories(root):
            if wanted is None or name in wanted or not is_signed(root / name):
                sign_directory(root / name, method)
                signed.append(name)
    sign_directory(root, method)
    return signed


@dataclasses.dataclass(frozen=True)
class Finding:
    """One file a check found wrong (repository-relative), and the signatures that say so."""

    path: str
    kind: Kind
    units: tuple[str, ...] = ()
    detail: str = ""

    def line(self) -> str:
        label = _LABELS[self.kind]
        if self.kind == "invalid":
            return f"  {label}: {self.path}: {self.detail}"
        signers = " and ".join(_unit_name(u) for u in self.units)
        return f"  {label}: {self.path} (per the signature of {signers})"


def _unit_name(unit: str) -> str:
    return "the repository" if unit == "" else unit


@dataclasses.dataclass(frozen=True)
class Verification:
    path: Path
    method: VerifyWith
    units: tuple[str, ...]
    files: int
    findings: tuple[Finding, ...]
    model_directory: bool = False

    @property
    def ok(self) -> bool:
        return not self.findings

    def line(self) -> str:
        """The one line of a repository that verifies."""
        if self.model_directory:
            covered = "its signature (one model directory)"
        else:
            covered = f"{len(self.units)} signatures (the repository's and {len(self.units) - 1} model directories')"
        return f"Verified {self.path}: all {self.files} files unchanged, covered by {covered}; {self.method.describe()}"

    def report(self) -> str:
        """Every finding, one per line, under a line naming the repository and what it was checked against."""
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        summary = ", ".join(f"{_LABELS[kind]}: {n}" for kind, n in counts.items())
        head = f"{self.path} does not verify against {self.method.describe()} ({summary}):"
        fixes = []
        if "invalid" in counts:
            fixes.append(
                "a bad signature was made by another key, or edited: check the key, or sign the repository again "
                "with yours (`repogen sign`) once you trust its files"
            )
        if {"changed", "missing", "added"} & counts.keys():
            fixes.append(
                "restore the files from the build that signed (or rebuild and sign again): a file the signatures do "
                "not list was not written by that build"
            )
        return "\n".join([head, *(f.line() for f in self.findings), "Fix: " + "; ".join(fixes) + "."])

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise VerificationError(self.report())


def verify_repository(path: str | os.PathLike[str], method: VerifyWith) -> Verification:
    """Check every signature of a repository (or of one model directory) against ``method``.

    The path may be a symlink (KServe's ``/mnt/models`` can be one): it is resolved first; a symlink inside
    is refused, as the library refuses it.
    """
    shown = Path(path)
    root = Path(os.path.realpath(path))
    if not root.is_dir():
        raise SigningError(f"{shown} is not a directory; expected a model repository (or one model directory)")
    alone = is_model_directory(root)
    if not is_signed(root):
        what = "model directory" if alone else "repository"
        raise VerificationError(
            f"{shown} is not signed: no {SIGNATURE_FILE} in it, so nothing says which files belong to this {what}; "
            f"sign it (`repogen sign {shown} --key KEY.pem`, or build with --sign-key KEY.pem)"
        )
    # A model directory without a signature of its own is still covered by the root's (which lists the model
    # signatures it saw, so a removed one is reported missing): upstream's CLI signs a repository that way.
    method.check()
    units = [""] if alone else ["", *(name for name in model_directories(root) if is_signed(root / name))]
    actual = hash_files(root)
    found: dict[tuple[str, str], Finding] = {}
    for unit in units:
        for finding in _check_unit(root, unit, actual, method):
            key = (finding.path, finding.kind)
            if key in found:
                finding = dataclasses.replace(finding, units=found[key].units + finding.units)
            found[key] = finding
    ordered = sorted(found.values(), key=lambda f: (_ORDER[f.kind], f.path))
    files = len([p for p in actual if p.rsplit("/", 1)[-1] != SIGNATURE_FILE])
    return Verification(shown, method, tuple(units), files, tuple(ordered), alone)


def _check_unit(root: Path, unit: str, actual: dict[str, str], method: VerifyWith) -> list[Finding]:
    prefix = f"{unit}/" if unit else ""
    signature = prefix + SIGNATURE_FILE
    try:
        signed = signed_files(root / signature, method)
    except BadSignature as exc:
        return [Finding(signature, "invalid", (unit,), f"not valid for {method.describe()}: {exc}")]
    mine = {p[len(prefix) :]: h for p, h in actual.items() if p.startswith(prefix) and p != signature}
    findings = []
    for relative in sorted(mine.keys() | signed.files.keys()):
        if relative not in mine:
            kind: Kind = "missing"
        elif relative not in signed.files:
            kind = "added"
        elif mine[relative] != signed.files[relative]:
            kind = "changed"
        else:
            continue
        findings.append(Finding(prefix + relative, kind, (unit,)))
    return findings


def signature_status(path: Path, method: VerifyWith | None) -> tuple[str, bool]:
    """One phrase on a repository's signatures, and whether it is acceptable (signed and, with a key, valid)."""
    root = Path(os.path.realpath(path))
    if not is_signed(root):
        return "not signed", method is None
    count = 1 + sum(is_signed(root / name) for name in ([] if is_model_directory(root) else model_directories(root)))
    if method is None:
        return f"signed ({count} signatures, not checked: pass --verify-key PUB.pem)", True
    result = verify_repository(root, method)
    if result.ok:
        return f"signed, verifies against {method.describe()}", True
    findings = len(result.findings)
    return f"signed, does NOT verify against {method.describe()} ({findings} findings: repogen verify)", False
