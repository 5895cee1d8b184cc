"""Signed repositories: OpenSSF Model Signing signatures, written and checked through PyPI's model-signing.

``sign_repository`` signs each model directory and the root (``repository``: why those units);
``verify_repository`` checks them all and names every changed, missing and added file. ``oms`` is the only
module that imports the library, an optional extra (``triton-repogen[signing]``).
"""

from .oms import EXTRA, INSTALL, SignWith, VerifyWith, library
from .repository_signatures import Finding, Verification, is_signed, sign_repository, verify_repository

__all__ = [
    "EXTRA",
    "INSTALL",
    "Finding",
    "SignWith",
    "Verification",
    "VerifyWith",
    "is_signed",
    "library",
    "sign_repository",
    "verify_repository",
]
