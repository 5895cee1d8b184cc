"""Where a distribution installs from when PyPI does not have it: PyTorch's own index, or the user's.

PyPI refuses local version labels (``torch==2.13.0+cpu``): a build with one comes from the index that
published it. PyTorch publishes its builds per variant at ``https://download.pytorch.org/whl/<label>``
(``cpu``, ``cu126``, ``cu130``, ``rocm6.4``, ``xpu``) under those labels; pip finds them there with
``--extra-index-url`` (dependencies still come from PyPI). Any other label has no index repogen knows
of: only an index or directory the user names (``--index-url``, ``--find-links``) can have it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from .options import canonical

__all__ = [
    "PYTORCH_INDEX", "PackageIndexes", "cuda_evidence", "cuda_labels", "is_cpu_build", "local_label", "pytorch_index",
    "unindexed",
]  # fmt: skip

PYTORCH_INDEX = "https://download.pytorch.org/whl"
# What PyTorch publishes on its index under its variant labels (the other names there are plain PyPI copies).
PYTORCH_DISTRIBUTIONS = frozenset(
    {"torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchrec", "torchao", "fbgemm-gpu",
     "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"}
)  # fmt: skip
_PYTORCH_LABEL = re.compile(r"cpu(\.cxx11\.abi)?|cu\d{3}|rocm\d+(\.\d+)*|xpu")
# CUDA major -> the labels PyTorch has published its builds for it under (download.pytorch.org/whl/<label>)
PYTORCH_CUDA_LABELS = {12: ("cu126", "cu128", "cu129"), 13: ("cu130",)}


def local_label(version: str) -> str | None:
    """``cpu`` for ``2.13.0+cpu``; None for a public version."""
    _, plus, label = version.partition("+")
    return label if plus and label else None


def is_cpu_build(version: str) -> bool:
    """A PyTorch CPU-only build (``+cpu``): on a ``KIND_GPU`` instance its tensors never reach the GPU."""
    label = local_label(version)
    return label is not None and label.split(".")[0] == "cpu"


def cuda_labels(major: int) -> str:
    """``torch==<version>+cu130 from https://download.pytorch.org/whl/cu130``: how to get a build for CUDA ``major``."""
    labels = PYTORCH_CUDA_LABELS.get(major) or (f"cu{major}x",)
    return f"torch==<version>+{labels[-1]} from {PYTORCH_INDEX}/{labels[-1]}"


def cuda_evidence(version: str) -> str:
    """Why a requirement needs a CUDA major: ``its version's +cu126`` (else its name: ``cupy-cuda12x``)."""
    label = local_label(version)
    return f"its version's +{label}" if label else "its name"


def pytorch_index(name: str, version: str) -> str | None:
    """PyTorch's index for one of its builds with a variant label (``.../whl/cu126``); None for anything else."""
    label = local_label(version)
    if label is None or canonical(name) not in PYTORCH_DISTRIBUTIONS or not _PYTORCH_LABEL.fullmatch(label):
        return None
    return f"{PYTORCH_INDEX}/{label}"


def unindexed(requirements: Iterable[str]) -> list[str]:
    """The ``dist==version`` requirements with a local label that no index repogen knows of has."""
    found = []
    for requirement in requirements:
        name, version = _split(requirement)
        if local_label(version) is not None and pytorch_index(name, version) is None:
            found.append(requirement)
    return found


@dataclasses.dataclass(frozen=True)
class PackageIndexes:
    """The package sources a pip install should use: the user's, else PyPI plus what the labels need."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    @property
    def given(self) -> bool:
        return bool(self.index_url or self.extra_index_urls or self.find_links)

    def pip_args(self, requirements: Iterable[str] = ()) -> list[str]:
        """pip's arguments for installing ``requirements``: the user's sources as given, or PyTorch's index
        for each variant label among them when the user gave none (an air-gapped mirror stays the only one)."""
        if self.given:
            args = ["--index-url", self.index_url] if self.index_url else []
            for url in self.extra_index_urls:
                args += ["--extra-index-url", url]
            for link in self.find_links:
                args += ["--find-links", link]
            return args
        found = {pytorch_index(*_split(requirement)) for requirement in requirements}
        return [arg for url in sorted(u for u in found if u is not None) for arg in ("--extra-index-url", url)]


def _split(requirement: str) -> tuple[str, str]:
    name, _, version = requirement.partition("==")
    return name, version
