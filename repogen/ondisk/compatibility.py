"""Whether a built repository can load on one Triton release, from what the build recorded.

``validate --triton-release R``, ``deploy --triton-release R`` and ``serve`` (which picks the
embedded pairing) ask the same question, so it is answered here once. A build records the Pythons
its sources were checked for (``pythons``), the bytecode Python of a ``--pin-python`` build, the
package trees it ships per container Python and the CUDA major their native libraries need; the
configs say which fields they set, and the model names are the directories'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..packages.cuda import requirement_majors
from ..packages.indexes import cuda_evidence, cuda_labels, is_cpu_build
from ..runtime.contract import BF16
from ..runtime.contract.package_trees import abi_tag
from ..triton import fields, python_backend
from ..triton.proto import model_config_pb2
from ..triton.releases import NEWEST, RELEASES, Release, newest_with_cuda
from .reader import BuiltRepository, ModelDir


@dataclass
class Fit:
    """What stops ``release`` loading the repository (``errors``), and what may (``warnings``)."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def trees(info: BuiltRepository) -> dict[str, dict[str, Any]]:
    """Every shipped package tree the manifest lists: ``<model>/<version>/packages/<tag>`` -> its record."""
    found = info.manifest.get("packages") or {}
    return {str(k): v for k, v in found.items() if isinstance(v, dict)}


def tree_pythons(info: BuiltRepository) -> set[str]:
    """The ABI tags (``cp312``) the shipped trees are built for; empty when nothing ships."""
    return {path.rsplit("/", 1)[-1].split("-", 1)[0] for path in trees(info)}


def fit(info: BuiltRepository, release: Release, *, configs: bool = True) -> Fit:
    """Can ``release`` (its container's Python, CUDA, schema, python_backend) load every model of ``info``?

    ``configs=False`` leaves out the fields each config sets (``validate`` names those by file and line).
    """
    found = Fit()
    where = f"{release.label} ({release.image})"
    built = info.build.get("python")
    if not info.portable and built and built != release.python:
        found.errors.append(
            f"{info.path} was built with --pin-python on Python {built}, but {where} serves models with Python "
            f"{release.python}; pinned payloads only load under the Python that wrote them. Rebuild without "
            "--pin-python, or with a Python of that container"
        )
    elif info.pythons and release.python not in info.pythons:
        shipped = tree_pythons(info)
        if shipped and abi_tag(release.python) not in shipped:
            serves = serving(info.pythons)
            found.errors.append(
                f"{info.path} ships its packages for Python {', '.join(info.pythons)} only ({serves}), but {where} "
                f"serves models with Python {release.python}, so its models would be refused at load. Deploy to "
                f"{serves}, or rebuild with --triton-release {release.ngc} (its packages must have wheels for "
                f"Python {release.python})"
            )
        else:
            found.warnings.append(
                f"{info.path} was checked for Python {', '.join(info.pythons)} only, but {where} serves models with "
                f"Python {release.python}: its sources may not compile there. Rebuild without --triton-release "
                f"(every container) or with --triton-release {release.ngc}"
            )
    for path, record in sorted(trees(info).items()):
        needs = [int(m) for m in record.get("cuda") or []]
        if any(m != release.cuda for m in needs):
            found.errors.append(
                f"{path} holds packages built for CUDA {', '.join(map(str, needs))} (recorded at build), but "
                f"{where} has CUDA {release.cuda}; rebuild with --triton-release {release.ngc} to be told which, "
                "or deploy to a container with that CUDA"
            )
    found.errors.extend(_requirement_errors(info, release, where))
    for model in info.models:
        found.errors.extend(_model_errors(model, release, configs))
        for name, what in _stub_names(model):
            found.warnings.extend(python_backend.name_warnings(name, release, what))
        found.warnings.extend(_cpu_build_warnings(model, release))
    return found


def _requirement_errors(info: BuiltRepository, release: Release, where: str) -> list[str]:
    """What the image installs (``--provided``, ``--packages record``) built for another CUDA major (``+cu126``)."""
    errors = []
    for requirement in info.requirements:
        for major in (m for m in requirement_majors(requirement) if m != release.cuda):
            right = newest_with_cuda(major)
            elsewhere = f", or deploy to a CUDA {major} release (--triton-release {right.ngc})" if right else ""
            evidence = cuda_evidence(requirement.partition("==")[2])
            errors.append(
                f"{requirement}, which the image installs, is a CUDA {major} build ({evidence}), but "
                f"{where} has CUDA {release.cuda}, where it fails on the GPU. Install its CUDA {release.cuda} build "
                f"where you build ({cuda_labels(release.cuda)}) and build again{elsewhere}"
            )
    return errors


def _cpu_build_warnings(model: ModelDir, release: Release) -> list[str]:
    """A ``KIND_GPU`` model whose torch is a CPU-only build (``+cpu``): it serves, but never on the GPU."""
    cpu = [r for r in model.imports if is_cpu_build(r.partition("==")[2])]
    if not cpu or not model.uses_gpu:
        return []
    return [
        f"model {model.name!r} runs KIND_GPU instances, but {', '.join(cpu)} is a CPU-only build: its tensors stay on "
        f"the CPU. Install the CUDA {release.cuda} build where you build ({cuda_labels(release.cuda)}) and build "
        "again, or give the model KIND_CPU instances"
    ]


def _stub_names(model: ModelDir) -> list[tuple[str, str]]:
    """The names a Python model's stubs are called by: the model's, and each named instance group's."""
    if not model.is_python or model.config is None:
        return []
    groups = [(g.name, f"model {model.name!r}: instance group") for g in model.config.instance_group if g.name]
    return [(model.name, "model"), *groups]


def _model_errors(model: ModelDir, release: Release, configs: bool) -> list[str]:
    errors = [e for name, what in _stub_names(model) if (e := python_backend.refused_name(name, release, what))]
    bf16 = _bf16_tensors(model)
    if bf16 and not python_backend.has_bf16(release):
        problem = python_backend.bf16_refusal(f"model {model.name!r}", bf16)
        errors.append(f"{problem}; {release.label} is one of them")
    if configs and model.config is not None:
        for name in sorted(set(fields.set_fields(model.config))):
            if not fields.supported_by(name, release):
                errors.append(
                    f"model {model.name!r} sets {name.rsplit('.', 1)[-1]!r} ({name}), introduced in Triton "
                    f"{fields.introduced_in(name)}; {release.label} rejects the whole model"
                )
    return errors


def _bf16_tensors(model: ModelDir) -> list[str]:
    """A Python model's BF16 inputs and outputs, which only python_backend r24.08 and later take."""
    if not model.is_python or model.config is None:
        return []
    bf16 = model_config_pb2.DataType.Value(BF16)
    names = [f"input {t.name!r}" for t in model.config.input if t.data_type == bf16]
    return names + [f"output {t.name!r}" for t in model.config.output if t.data_type == bf16]


def serving(pythons: list[str] | tuple[str, ...]) -> str:
    """``NGC 24.11+ (Python 3.12)``: the containers that serve with the recorded Pythons."""
    parts = []
    for python in pythons:
        runs = [r for r in RELEASES if r.python == python]
        if not runs:
            parts.append(f"Python {python}, which no NGC image runs")
        else:
            last = "+" if runs[-1] is NEWEST else f"-{runs[-1].ngc}"
            parts.append(f"NGC {runs[0].ngc}{last} (Python {python})")
    return ", ".join(parts)


def serves(manifest: dict[str, Any]) -> str | None:
    """``NGC 24.11+ (Python 3.12)``: the containers a built repository serves, from its records (None: unknown)."""
    if not manifest:
        return None
    target = manifest.get("target")
    if isinstance(target, dict) and target.get("ngc"):
        return f"tritonserver {target.get('tritonserver')} (NGC {target['ngc']}) only, Python {target.get('python')}"
    pythons = [str(p) for p in manifest.get("pythons") or ()]
    if not manifest.get("portable", True):
        built = (manifest.get("build") or {}).get("python")
        return f"Python {built} only (built with --pin-python): {serving([str(built)])}"
    text = serving(pythons) if pythons else "every NGC container from 23.10"
    cuda = sorted({int(m) for tree in (manifest.get("packages") or {}).values() for m in (tree.get("cuda") or [])})
    if cuda:
        releases = [r.ngc for r in RELEASES if r.cuda in cuda]
        text += f"; its packages need CUDA {', '.join(map(str, cuda))} (NGC {releases[0]}-{releases[-1]})"
    return text
