"""The library API behind ``repogen build``: DSL → IR → file map → disk."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from .dsl.repository import Repository
from .emit.assemble import emit_repository
from .emit.model_files import configs as emit_configs
from .emit.payloads import MadeAnew, PayloadPlan
from .emit.plan import Progress, plan_payloads
from .errors import ContainersLeftOutWarning as ContainersLeftOutWarning  # their home; imported from here too
from .errors import LargePackagesWarning as LargePackagesWarning
from .errors import SharedObjectWarning
from .hashing import Files
from .ir import RepositorySpec, lower
from .ir.versions import merged_versions
from .loader import load_app, local_modules
from .ondisk.merge import merge_versions, versions_on_disk
from .ondisk.writer import WritePlan, locked
from .packages import PackageOptions, Packager
from .pickling import cuda_scan, picklers
from .pickling.shared_objects import Shared
from .runtime.contract import SIGNATURE_FILE
from .server.provision.install import default_cache_dir
from .server.provision.pythons import find_python
from .signing import SignWith, library, sign_repository
from .triton.targets import Targets, TritonTarget, resolve_targets

if TYPE_CHECKING:
    from typing import Unpack  # 3.11; annotations only, so 3.10 runs this module too


@dataclasses.dataclass(frozen=True)
class BuildResult:
    output: Path
    spec: RepositorySpec
    files: tuple[str, ...]
    packages: str | None = None
    """What the shipped packages add, in one line (None when nothing ships)."""
    targets: Targets | None = None
    """The containers the repository serves: all it was asked for, less those its packages cannot reach."""
    made_anew: tuple[tuple[str, MadeAnew], ...] = ()
    """(model, what) for each live object the server makes anew (a lock, an empty queue, an idle executor)."""
    shared: tuple[Shared, ...] = ()
    """Objects several models hold: each model gets its own copy in the server (one ``SharedObjectWarning`` each)."""


LARGE_PACKAGES = 10**9


class BuildOptions(TypedDict, total=False):
    """How to build, as :func:`build_repository` and :func:`build_app` both take it (every key optional).

    By default the payloads ship source and serve on every NGC container from 23.10 that the shipped
    packages reach (the others are left out with a :class:`ContainersLeftOutWarning`).
    """

    force: bool
    """Replace an output holding files repogen did not write; with ``version``, also a changed config."""
    triton_release: str | TritonTarget | Targets | None
    """The one Triton release that will serve the repository (``"24.10"``, ``"2.51.0"``, any spelling): narrows
    the checks to its container and records it."""
    target_triton: str | TritonTarget | Targets | None
    """Deprecated: ``triton_release``'s former name, still taken with a ``DeprecationWarning``."""
    pin_python: bool
    """Ship this interpreter's bytecode instead (only this Python minor loads it; with a target, a mismatched
    interpreter is refused)."""
    version: int | None
    """Build every model as that version only and merge it into the existing repository, leaving the other
    versions' files untouched."""
    progress: Progress | None
    packages: PackageOptions | None
    """What happens to the distributions payloads import (default: they ship inside the repository, built for
    each target container's Python)."""
    log: Callable[[str], None] | None
    """Hears the notes about packages."""
    sign: SignWith | None
    """Sign the repository before it replaces the output (OpenSSF Model Signing, ``repogen.signing``): every
    model directory and the root, or with ``version`` the models built and the root."""


def build_repository(
    repository: Repository, output: str | os.PathLike[str], *, roots: tuple[str, ...] = (),
    **options: Unpack[BuildOptions],
) -> BuildResult:  # fmt: skip
    """Compile ``repository`` into ``output`` (replaced atomically), as ``options`` say (:class:`BuildOptions`).

    ``roots[0]`` is the user's project: the modules loaded from under it ship with the models. The build
    goes down the layers once: the IR, the plan of its payloads (each pickled once, for the containers its
    packages reach), the files of that plan, and the write (with ``version``, merged into what is there).
    """
    unknown = sorted(set(options) - BuildOptions.__optional_keys__)
    if unknown:  # as a signature would: a misspelt option must not be dropped quietly
        raise TypeError(f"build_repository() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    _renamed(options, "build_repository")
    if options.get("sign") is not None:
        library()  # no signing extra: fail now, before the build's work, naming it
    release = options.get("triton_release")
    targets = (
        release
        if isinstance(release, Targets)
        else resolve_targets(release, pin_python=options.get("pin_python", False))
    )
    if roots:
        picklers.register_by_value(local_modules(Path(roots[0]).resolve()))
    spec = lower(repository, version=options.get("version"), cuda_scan=cuda_scan.cuda_callables)
    shipping = options.get("packages") or PackageOptions()
    log = options.get("log")
    packager = Packager(shipping, targets, default_cache_dir(), log, find_python) if shipping.mode == "ship" else None
    plan = plan_payloads(spec, roots, targets, packager, options.get("progress"))
    for left in plan.left_out:
        warnings.warn(
            f"not targeting {left.containers}: {left.reason}. The repository serves {left.serves}. Pass "
            "--all-containers to make this an error, or --triton-release for one container",
            ContainersLeftOutWarning,
            stacklevel=2,
        )
    for shared in plan.shared:
        site = spec.site(shared.holders[0][0])
        warnings.warn(f"{site}: {shared.message()}" if site else shared.message(), SharedObjectWarning, stacklevel=2)
    files = emit_repository(spec, plan, options.get("progress"))
    _write(spec, files, Path(output), plan.packager, options)
    _warn_heavy(plan.packager)
    summary = plan.packager.summary() if plan.packager else None
    return BuildResult(
        output=Path(output), spec=spec, files=tuple(files), packages=summary, targets=plan.targets,
        made_anew=_made_anew(plan), shared=plan.shared,
    )  # fmt: skip


def _made_anew(plan: PayloadPlan) -> tuple[tuple[str, MadeAnew], ...]:
    """Each model's live objects made anew, once per model whatever its versions, in the order models were built."""
    found: dict[tuple[str, MadeAnew], None] = {}
    for (model, _), payload in plan.pickled.items():
        found.update(dict.fromkeys((model, made) for made in payload.made_anew))
    return tuple(found)


def _renamed(options: BuildOptions, caller: str) -> None:
    """``target_triton`` → ``triton_release``: the former name still builds, with a warning that names the new."""
    if "target_triton" not in options:
        return
    if "triton_release" in options:
        raise TypeError(f"{caller}() got both triton_release and target_triton (its former name): pass triton_release")
    warnings.warn(
        f"{caller}(target_triton=...) is deprecated; use triton_release=...", DeprecationWarning, stacklevel=3
    )
    options["triton_release"] = options.pop("target_triton")


def _write(spec: RepositorySpec, files: Files, output: Path, packager: Packager | None, options: BuildOptions) -> None:
    """Write ``files`` (signed when asked); with ``version``, merged into the repository there, under its lock."""
    version, sign, log = options.get("version"), options.get("sign"), options.get("log")
    force = options.get("force", False)
    finish = None
    if sign is not None:
        method = sign

        def finish(staged: Path) -> None:
            sign_repository(staged, method, models=spec.names if version is not None else None)

    elif (output / SIGNATURE_FILE).is_file() and log is not None:
        log(
            f"note: {output} was signed and this build is not (no --sign-key): "
            + ("the repository's signature and the rebuilt models' are gone" if version else "no signature remains")
        )
    with locked(output, force) as target:
        plan = WritePlan(files)
        if version is not None and target.path.exists():
            plan = _merged(target.path, spec, files, version, force)
        links = packager.links if packager else {}
        target.write(WritePlan(plan.files, {**plan.carried, **links}), finish)


def _merged(output: Path, spec: RepositorySpec, files: Files, version: int, force: bool) -> WritePlan:
    """``--model-version N``: the plan that merges the build into ``output``, made under the writer's lock from what is
    there. Each model's declared version policy is bound to the versions present then (through the IR), and its
    config emitted for them."""
    names = [m.name for m in spec.models] + [n.name for n in spec.networks]
    present = {name: versions_on_disk(output, name) | {version} for name in names}
    configs = emit_configs(merged_versions(spec, present))
    return merge_versions(output, files, versions=dict.fromkeys(names, version), configs=configs, force=force)


def _warn_heavy(packager: Packager | None) -> None:
    heavy = packager.oversized(LARGE_PACKAGES) if packager else []
    if heavy:
        warnings.warn(
            f"the repository ships more than {LARGE_PACKAGES / 1e9:.0f} GB of packages for a container Python "
            f"({'; '.join(heavy)}), copied to every server that loads it. An image can hold the heaviest instead: "
            "build with --provided NAME for each and deploy with `repogen deploy --docker`, whose image installs "
            "them (a torch build from PyTorch's index, e.g. torch==2.13.0+cpu: a 0.19 GB wheel, 0.70 GB installed, "
            "instead of PyPI's build with its CUDA libraries)",
            LargePackagesWarning,
            stacklevel=3,
        )


def build_app(
    target: str,
    output: str | os.PathLike[str],
    *,
    app_dir: str | os.PathLike[str] | None = None,
    all_containers: bool = False,
    **options: Unpack[BuildOptions],
) -> BuildResult:
    """Load ``path/app.py:attr`` (or ``pkg.module:attr``) and build it; the user's modules go by value.

    The target is checked before the app is imported: a wrong interpreter fails in a second.
    ``all_containers`` fails the build when its packages cannot reach every container from 23.10.
    """
    _renamed(options, "build_app")
    release = options.get("triton_release")
    if not isinstance(release, Targets):
        pin_python = options.get("pin_python", False)
        options["triton_release"] = resolve_targets(release, pin_python=pin_python, all_containers=all_containers)
    if options.get("sign") is not None:
        library()  # no signing extra: fail before importing the app
    app = load_app(target, app_dir)
    return build_repository(app.repository, output, roots=(str(app.app_dir),), **options)
