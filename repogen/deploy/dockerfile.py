"""Dockerfiles that serve a repository on the stock NGC ``tritonserver`` image.

Two modes. By default the repository built here is copied into the image: it is the whole
deployment (a portable build, the default, loads on the image's Python whatever Python built it, and
ships the third-party packages its models import), so the image serves what ``repogen serve`` serves.
With ``--app`` the repository is rebuilt *inside* the image instead (the project is copied in, and
repogen, from a wheel of itself written into the build context, runs there beside the packages the
app imports): for a ``--pin-python`` build, whose payloads load only under the Python that wrote them.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..emit.templates import render
from ..errors import DeployError, UsageError
from ..ondisk.reader import BuiltRepository
from ..packages.indexes import PackageIndexes, unindexed
from ..runtime.contract import METADATA_FILE
from ..triton.endpoints import DEFAULT_PORTS, HTTP_PORT
from ..triton.releases import Release
from ..triton.shm import SHM_PER_INSTANCE, shm_size_bytes
from ..version import __version__
from . import access_secret
from .build_context import context_path
from .probe import dead_stub_note, healthcheck
from .resources import format_quantity
from .verify import VERIFIER_DIR, VerifyDeploy

__all__ = ["DockerFiles", "dockerfile", "requirements_run"]


@dataclass(frozen=True)
class DockerFiles:
    dockerfile: str
    dockerignore: str


FIND_LINKS_DIR = "/tmp/repogen-find-links"  # a --find-links directory of the build context, copied into the image


def requirements_run(
    info: BuiltRepository, build: bool = False, indexes: PackageIndexes | None = None, context: Path | None = None
) -> str:
    """The ``RUN pip install`` line (a comment when there is nothing to install), after the ``COPY`` of any
    ``--find-links`` directory it reads.

    To serve: what the repository does not ship (``--packages record``, ``--provided``). To build the
    app inside the image (``build``): everything its models import, since the app imports them. Each
    installs from where it comes from (``repogen.packages.indexes``): PyTorch's index for a PyTorch
    variant (``torch==2.13.0+cpu``), the sources the user gave (``indexes``) instead of any repogen adds.
    """
    wanted = info.imports if build else info.requirements
    if not wanted:
        if build:
            return f"# No third-party distribution imported (<model>/<version>/{METADATA_FILE})."
        if info.imports:
            return "# The third-party packages the models import ship in the repository (<model>/<version>/packages)."
        return f"# No third-party requirements recorded in <model>/<version>/{METADATA_FILE}."
    indexes = indexes or PackageIndexes()
    missing = [] if indexes.given else unindexed(wanted)
    if missing:
        raise DeployError(
            f"{', '.join(missing)}: a local version label, which PyPI never has and no package index repogen knows "
            f"of publishes (PyTorch's does for its own +cpu, +cu126, ... builds), so `pip install` in the image "
            "cannot find it; nothing was written. Pass --index-url or --find-links with the index or directory "
            "that has it (an air-gapped mirror), or ship it inside the repository (build without --provided)"
        )
    copies, sources = _copied_find_links(indexes, context or Path("."))
    args = " ".join(shlex.quote(a) for a in (*sources.pip_args(wanted), *wanted))
    return "".join(copies) + f"RUN python3 -m pip install --no-cache-dir {args}"


def _copied_find_links(indexes: PackageIndexes, context: Path) -> tuple[list[str], PackageIndexes]:
    """A ``--find-links`` that is a directory here is copied into the image (it must lie in the build context)."""
    copies, links = [], []
    for number, link in enumerate(indexes.find_links):
        if "://" in link or not Path(link).is_dir():
            links.append(link)
            continue
        relative = context_path(Path(link), context, "--find-links directory")
        target = f"{FIND_LINKS_DIR}/{number}"
        copies.append(f"COPY {relative} {target}\n")
        links.append(target)
    return copies, dataclasses.replace(indexes, find_links=tuple(links))


def _python_note(info: BuiltRepository, target: Release) -> str:
    if info.portable:
        return f"Its payloads ship source, which {target.image}'s Python {target.python} compiles."
    built = info.build.get("python", "(unknown)")
    return (
        f"It was built with --pin-python by Python {built}; {target.image} serves models with Python "
        f"{target.python}, and they must match."
    )


def _app_in_image(app: str, context: Path) -> str:
    """``path/to/app.py:attr`` relative to the build context → its path under ``/src``."""
    target, sep, attr = app.rpartition(":")
    if not sep or not target:
        raise UsageError(
            f"--app {app!r} is not APP:ATTR; expected what `repogen build` takes, e.g. "
            "examples/quickstart/app.py:models."
        )
    if not target.endswith(".py"):  # a module path (package.module:attr) resolves from /src
        return app
    relative = context_path(Path(target), context, "app file")
    return f"/src/{relative}:{attr}"


_SERVER = ["tritonserver", "--model-repository=/models"]


def dockerfile(
    info: BuiltRepository,
    target: Release,
    *,
    app: str | None,
    context: Path,
    dockerfile_path: str,
    tag: str,
    repogen_wheel: str | None,
    gpus: int = 1,
    run_gpus: str = "",
    indexes: PackageIndexes | None = None,
    verify: VerifyDeploy | None = None,
    key_in_context: str | None = None,
    apis: tuple[str, ...] = (),
    server: Sequence[str] | None = None,
) -> DockerFiles:
    """The Dockerfile (and its ``.dockerignore``) for ``info`` on ``target``; ``app`` rebuilds it in the image.

    ``verify`` (with the public key's path in the context) adds a stage that verifies the repository's
    signatures before the final image copies it (``repogen.deploy.verify``). ``apis``: the API groups the
    server keeps behind the key ``docker run -e`` gives it (deploy/access_secret.py). ``run_gpus``: ``docker run``'s
    ``--gpus`` for a repository with GPU models (deploy/resources.py). ``server``: tritonserver's arguments beyond
    the repository and the key (default: the options the models depend on).
    """
    common = _common(info, target, context, dockerfile_path, tag, gpus, indexes, apis, server)
    common["run_gpus"] = run_gpus
    if app is None:
        text, keep = _prebuilt(info, target, common, context, verify, key_in_context)
    else:
        text = render(
            "deploy/Dockerfile.build.tmpl",
            **common,
            build_requirements_run=requirements_run(info, build=True, indexes=indexes, context=context),
            app=app,
            app_in_image=_app_in_image(app, context),
            repogen_wheel=repogen_wheel,
            repogen_wheel_name=PurePosixPath(repogen_wheel or "").name,
        )
        keep = "# --app: the build stage writes its own repository."
    ignore = render("deploy/dockerignore.tmpl", repogen_version=__version__, keep_repository=keep)
    return DockerFiles(text.decode(), ignore.decode())


def _common(
    info: BuiltRepository,
    target: Release,
    context: Path,
    dockerfile_path: str,
    tag: str,
    gpus: int,
    indexes: PackageIndexes | None,
    apis: tuple[str, ...],
    server: Sequence[str] | None = None,
) -> dict[str, Any]:
    """What both Dockerfiles say: the image, ports, /dev/shm, the health check, requirements, access, the command."""
    shm = format_quantity(shm_size_bytes(info.python_instances(gpus)))
    return {
        "repogen_version": __version__,
        "image": target.image,
        "python": target.python,
        "publish_ports": " ".join(f"-p{port}:{port}" for port in DEFAULT_PORTS.values()),
        "expose_ports": " ".join(str(port) for port in DEFAULT_PORTS.values()),
        "dockerfile": dockerfile_path,
        "tag": tag,
        "context": context.as_posix(),
        "shm_size": shm.replace("Mi", "m").replace("Gi", "g"),
        "shm_total": shm,
        "python_instances": info.python_instances(gpus),
        "shm_per_instance": format_quantity(SHM_PER_INSTANCE),
        "http_port": HTTP_PORT,
        "healthcheck": healthcheck(info, HTTP_PORT, apis),
        "dead_stub_note": dead_stub_note(target),
        "requirements_run": requirements_run(info, indexes=indexes, context=context),
        "access_note": access_secret.docker_note(apis),
        "server_cmd": f"CMD {json.dumps(access_secret.docker_cmd(target, apis, [*_SERVER, *_server(info, server)]))}",
        "run_env": f"-e {access_secret.ENV} " if apis else "",
    }


def _server(info: BuiltRepository, server: Sequence[str] | None) -> list[str]:
    return list(info.server_args() if server is None else server)


def _prebuilt(
    info: BuiltRepository,
    target: Release,
    common: dict[str, Any],
    context: Path,
    verify: VerifyDeploy | None,
    key_in_context: str | None,
) -> tuple[bytes, str]:
    """The Dockerfile copying the repository as built (through a verify stage with a key), and what
    its .dockerignore keeps."""
    repository = context_path(info.path, context, "repository")
    if verify is not None and key_in_context is not None:
        stage = verify.docker_stage(repository, key_in_context) + "\n"
        copy = (
            "COPY --from=verify /models /models\n"
            f"# The verifier too, for the init containers of `repogen deploy --k8s/--kserve --verify-key`.\n"
            f"COPY --from=verify {VERIFIER_DIR} {VERIFIER_DIR}"
        )
    else:
        stage, copy = "", f"COPY {repository} /models"
    text = render(
        "deploy/Dockerfile.prebuilt.tmpl",
        **common,
        repository=repository,
        python_note=_python_note(info, target),
        verify_stage=stage,
        copy_repository=copy,
    )
    keep = (
        "# The repository is copied as built: the packages it ships hold bytecode its recorded digests cover.\n"
        f"!{'' if repository == '.' else repository + '/'}**"
    )
    return text, keep
