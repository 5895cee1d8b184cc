"""Stand-ins for NVIDIA's ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3`` images, built on this machine's Docker engine.

No registry can be reached from the machines the tests run on, so NGC's images cannot be pulled; what
makes one of them what a model sees can be rebuilt from Debian's packages, pyenv's CPythons and PyPI:

* a ``debootstrap --variant=minbase bookworm`` root filesystem plus the libraries CPython's extension
  modules link (:data:`EXTRA_PACKAGES`), ``docker import``-ed as :data:`BASE_TAG` (its tar kept in the
  cache, so a pruned engine re-imports it without the network);
* the container's CPython (pyenv's ``<root>/versions/<x.y.z>``, without its test suite and site-packages)
  at ``/usr/local``, ``python3`` on PATH, with pip and numpy 1.26.4 and nothing else;
* the stock tritonserver of the release, from the ``nvidia-pytriton`` wheel ``repogen serve`` installs
  (:func:`repogen.server.provision.install.ensure_server`), at ``/opt/tritonserver``
  (``bin/``, ``lib/``, ``caches/``, ``backends/python/`` with the stub for that Python), on PATH;
* user ``triton-server`` (uid/gid 1000), ``WORKDIR /opt/tritonserver``, an entrypoint that prints a
  banner and runs its command as NVIDIA's does (``CMD`` and ``docker run IMAGE cmd`` are not hidden).

Each image carries a label with the hash of everything it is built from; :func:`ensure_standin` builds
it only when that hash changes. Tags: ``repogen-standin/tritonserver:<yy.mm>-py3`` where server and
Python are that release's (23.10, 24.10), and ``24.10-py3.12`` for tritonserver 2.51 with Python 3.12,
which stands in for the releases that serve models on Python 3.12 (no PyPI wheel ships their own
server). What differs from NVIDIA's images: Debian, not Ubuntu (glibc 2.36); no CUDA, no GPU, no
backend but Python; Python at /usr/local, not Ubuntu's /usr/bin/python3.

``python -m repogen.testing.standin [24.10 ...]`` (``make standin``) builds them and prints each one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from repogen.emit.templates import render
from repogen.errors import DockerError
from repogen.server.provision.install import default_cache_dir, ensure_server, locked
from repogen.server.provision.pythons import require_python
from repogen.server.running.docker import Engine, engine
from repogen.triton.releases import Release, get_release, pairing_label

__all__ = ["BASE_TAG", "STANDINS", "StandIn", "StandInImage", "ensure_base", "ensure_standin", "standin_for"]

IMAGE_REPOSITORY = "repogen-standin/tritonserver"
BASE_TAG = "repogen-standin/debian:bookworm-minbase"
LABEL = "org.repogen.standin.inputs"
MIRROR = "http://deb.debian.org/debian"
EXTRA_PACKAGES = ("libncursesw6", "libnsl2", "libreadline8", "libsqlite3-0", "libssl3")
"""What pyenv's CPython extension modules link beyond minbase (ssl, hashlib, sqlite3, readline, curses, nis)."""
_PRUNED = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info")
_SCHEMA = 1
"""Bump to rebuild every stand-in when this module changes what goes into one."""
_LOCK_TIMEOUT_S = 1800.0

Log = Callable[[str], None]


@dataclass(frozen=True)
class StandIn:
    """One stand-in: the release whose tritonserver it holds, and the Python its stub serves models with."""

    release: Release
    python: str

    @property
    def tag(self) -> str:
        """``repogen-standin/tritonserver:24.10-py3``, or ``24.10-py3.12`` when the Python is not that release's."""
        flavor = "py3" if self.python == self.release.python else f"py{self.python}"
        return f"{IMAGE_REPOSITORY}:{self.release.ngc}-{flavor}"

    @property
    def label(self) -> str:
        """``tritonserver 2.51.0 + Python 3.12 (stands in for NGC 24.11+)``."""
        return pairing_label(self.release, self.python)


STANDINS: tuple[StandIn, ...] = (
    StandIn(get_release("23.10"), "3.10"),
    StandIn(get_release("24.10"), "3.10"),
    StandIn(get_release("24.10"), "3.12"),
)


def standin_for(key: str | Release) -> StandIn:
    """The stand-in for a release (any spelling ``get_release`` takes) or a stand-in tag (``24.10-py3.12``).

    A release with a stand-in of its own server and Python gets it; any release whose containers serve
    models on a Python that only a stand-in of another server has (3.12: NGC 24.11 and later) gets that one.
    """
    if isinstance(key, str):
        name = key.strip().rsplit(":", 1)[-1]
        for standin in STANDINS:
            if name == standin.tag.rsplit(":", 1)[-1]:
                return standin
    release = get_release(key)
    exact = [s for s in STANDINS if s.release == release and s.python == release.python]
    same_python = [s for s in STANDINS if s.python == release.python and s.python != s.release.python]
    if exact or same_python:
        return (exact or same_python)[0]
    raise LookupError(
        f"no stand-in image for {release.label} (Python {release.python}); there are "
        + ", ".join(f"{s.tag} ({s.label})" for s in STANDINS)
    )


@dataclass(frozen=True)
class StandInImage:
    """A built stand-in on the engine."""

    standin: StandIn
    image_id: str
    size: int
    """Bytes, as ``docker image inspect`` counts them (every layer)."""
    built_s: float | None
    """Seconds this call spent building it; ``None`` when the image was already there."""

    @property
    def tag(self) -> str:
        return self.standin.tag


# --------------------------------------------------------------------------- helpers


@contextmanager
def _machine_lock(name: str) -> Iterator[None]:
    """One builder of a tag per machine: the engine (and so the tag) is shared by every cache on it."""
    directory = Path(tempfile.gettempdir()) / "repogen-standin-locks"
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / f"{name.replace('/', '_').replace(':', '_')}.lock"), timeout=_LOCK_TIMEOUT_S):
        yield


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:20]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _labelled(engine: Engine, tag: str, inputs: str) -> dict[str, Any] | None:
    found = engine.inspect("image", tag)
    labels = ((found or {}).get("Config") or {}).get("Labels") or {}
    return found if labels.get(LABEL) == inputs else None


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise DockerError(f"{what} failed (exit code {proc.returncode}): {' '.join(cmd)}\n{tail}")


# --------------------------------------------------------------------------- base image


def ensure_base(docker: Engine, cache_dir: Path, log: Log = print) -> str:
    """The bookworm minbase image (:data:`BASE_TAG`): imported from the cached tar, debootstrapped once."""
    inputs = _digest({"suite": "bookworm", "variant": "minbase", "mirror": MIRROR, "include": EXTRA_PACKAGES,
                      "pruned": _PRUNED, "schema": _SCHEMA})  # fmt: skip
    found = _labelled(docker, BASE_TAG, inputs)
    if found:
        return str(found["Id"])
    with _machine_lock(BASE_TAG):
        found = _labelled(docker, BASE_TAG, inputs)
        if found:
            return str(found["Id"])
        tar = _rootfs_tar(cache_dir / "standin", inputs, log)
        start = time.monotonic()
        docker("import", "--change", f"LABEL {LABEL}={inputs}", str(tar), BASE_TAG, timeout=900)
        log(f"stand-in: imported {BASE_TAG} from {tar} in {time.monotonic() - start:.0f} s")
        found = _labelled(docker, BASE_TAG, inputs)
        assert found is not None, BASE_TAG
        return str(found["Id"])


def _rootfs_tar(directory: Path, inputs: str, log: Log) -> Path:
    tar = directory / f"bookworm-minbase-{inputs}.tar"
    if tar.is_file():
        return tar
    with locked(directory, tar.name):
        if tar.is_file():
            return tar
        debootstrap = shutil.which("debootstrap")
        if debootstrap is None or os.geteuid() != 0:
            raise DockerError(
                "building the stand-in images' Debian root filesystem needs `debootstrap` run as root "
                f"({'not installed' if debootstrap is None else 'not root'}); apt-get install debootstrap, "
                f"and run as root (or copy {tar.name} into {directory} from a machine that has it)."
            )
        start = time.monotonic()
        root = Path(tempfile.mkdtemp(dir=directory, prefix=".rootfs-"))
        try:
            _run([debootstrap, "--variant=minbase", f"--include={','.join(EXTRA_PACKAGES)}", "bookworm", str(root),
                  MIRROR], "debootstrap")  # fmt: skip
            for pruned in _PRUNED:
                shutil.rmtree(root / pruned, ignore_errors=True)
                (root / pruned).mkdir(parents=True)
            partial = tar.with_suffix(".tar.partial")
            _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."], "packing the root filesystem")
            os.replace(partial, tar)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        log(f"stand-in: debootstrapped bookworm minbase into {tar} in {time.monotonic() - start:.0f} s")
    return tar


# --------------------------------------------------------------------------- stand-in image


def _python_prefix(version: str) -> tuple[Path, str]:
    """The self-contained CPython prefix of ``version`` (pyenv's) and its ``sys.version``."""
    interpreter = require_python(version)
    prefix = Path(interpreter).resolve().parent.parent
    libpython = prefix / "lib" / f"libpython{version}.so.1.0"
    if not (libpython.is_file() and (prefix / "lib" / f"python{version}" / "os.py").is_file()):
        raise DockerError(
            f"Python {version} at {interpreter} is not a self-contained prefix with a shared libpython ({libpython} "
            f"missing); a stand-in copies the whole prefix. Install it with PYTHON_CONFIGURE_OPTS=--enable-shared "
            f"pyenv install {version}."
        )
    full = subprocess.run([str(interpreter), "-c", "import sys; print(sys.version)"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    return prefix, full


def _numpy_wheel(release: Release, python: str, directory: Path) -> Path:
    """numpy ``release.numpy``'s manylinux wheel for ``python``, downloaded once into ``directory``."""
    tag = f"cp{python.replace('.', '')}"
    found = sorted(directory.glob(f"numpy-{release.numpy}-{tag}-{tag}-*manylinux*x86_64*.whl"))
    if found:
        return found[0]
    with locked(directory, f"numpy-{release.numpy}-{tag}"):
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
              "--disable-pip-version-check", "--python-version", python, "--implementation", "cp", "--abi", tag,
              "--platform", "manylinux_2_17_x86_64", "-d", str(directory), f"numpy=={release.numpy}"],
             f"downloading numpy {release.numpy} for Python {python}")  # fmt: skip
    found = sorted(directory.glob(f"numpy-{release.numpy}-{tag}-{tag}-*.whl"))
    if not found:
        raise DockerError(f"pip downloaded no numpy {release.numpy} wheel for Python {python} into {directory}")
    return found[0]


def _link_tree(source: Path, target: Path, skip: Callable[[Path], bool] = lambda _: False) -> None:
    """Hard-link ``source``'s files under ``target`` (copy across file systems), symlinks kept, ``skip`` left out."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if skip(relative):
            continue
        destination = target / relative
        if path.is_symlink():
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.symlink_to(os.readlink(path))
        elif path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, destination)
            except OSError:
                shutil.copy2(path, destination)


def _stage_python(prefix: Path, version: str, target: Path) -> None:
    """``prefix`` as it goes to /usr/local: no test suite, no static libpython, site-packages holding pip only."""
    stdlib = Path("lib") / f"python{version}"

    def skip(relative: Path) -> bool:
        parts = relative.parts
        if parts[0] in ("bin", "include", "share") or relative.name.endswith(".a"):
            return True
        if parts[:3] == (*stdlib.parts, "test"):
            return True
        return parts[:3] == (*stdlib.parts, "site-packages") and len(parts) > 3 and not parts[3].startswith("pip")

    _link_tree(prefix, target, skip)
    old, new = os.fsencode(prefix), b"/usr/local"
    (target / "bin").mkdir(parents=True)
    for path in sorted((prefix / "bin").iterdir()):  # copied, shebangs rewritten: never edit pyenv's files
        destination = target / "bin" / path.name
        if path.is_symlink():
            destination.symlink_to(os.readlink(path))
        elif path.is_file():
            data = path.read_bytes()
            destination.write_bytes(data.replace(old, new) if data.startswith(b"#!") else data)
            destination.chmod(path.stat().st_mode & 0o7777)


def _stage_server(release: Release, python: str, cache_dir: Path, target: Path) -> None:
    install = ensure_server(release, cache_dir=cache_dir)
    server = install.tritonserver_dir
    _link_tree(server / "bin", target / "bin")
    _link_tree(server / "caches", target / "caches")
    _link_tree(install.backend_directory(python), target / "backends")
    _link_tree(install.libs_dir, target / "lib")


def ensure_standin(
    key: str | Release | StandIn,
    *,
    cache_dir: str | Path | None = None,
    docker: Engine | None = None,
    log: Log = print,
) -> StandInImage:
    """The stand-in image for ``key`` (see :func:`standin_for`), built when missing or when its inputs changed."""
    standin = key if isinstance(key, StandIn) else standin_for(key)
    docker = (docker or engine()).with_env(DOCKER_BUILDKIT="0")  # the classic builder: BuildKit would pull
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    release, python = standin.release, standin.python
    base = ensure_base(docker, cache, log)
    prefix, full_version = _python_prefix(python)
    wheel = _numpy_wheel(release, python, cache / "standin" / "wheels")
    values = {
        "base": base, "ngc_image": release.image, "ngc": release.ngc, "tritonserver": release.tritonserver,
        "python": python, "python_version": full_version.split()[0], "numpy": release.numpy,
        "pytriton": release.wheel.pytriton if release.wheel else "?",
    }  # fmt: skip
    dockerfile = render("standin/Dockerfile.tmpl", **values)
    entrypoint = render("standin/nvidia_entrypoint.sh.tmpl", **values)
    libpython = (prefix / "lib" / f"libpython{python}.so.1.0").stat()
    inputs = _digest({
        "schema": _SCHEMA, "pairing": standin.label, "dockerfile": dockerfile.decode(),
        "entrypoint": entrypoint.decode(),
        "server_wheel": release.wheel.sha256 if release.wheel else None, "python": full_version,
        "libpython": [libpython.st_size, libpython.st_mtime_ns], "numpy_wheel": _file_sha256(wheel),
        "pip": sorted(p.name for p in (prefix / "lib" / f"python{python}" / "site-packages").glob("pip*")),
    })  # fmt: skip
    found = _labelled(docker, standin.tag, inputs)
    if found:
        return StandInImage(standin, str(found["Id"]), int(found["Size"]), None)
    with _machine_lock(standin.tag):
        found = _labelled(docker, standin.tag, inputs)
        if found:
            return StandInImage(standin, str(found["Id"]), int(found["Size"]), None)
        start = time.monotonic()
        previous = docker.inspect("image", standin.tag)
        context = Path(tempfile.mkdtemp(dir=cache / "standin", prefix=".context-"))
        try:
            _stage_python(prefix, python, context / "python")
            _stage_server(release, python, cache, context / "tritonserver")
            (context / "wheels").mkdir()
            os.link(wheel, context / "wheels" / wheel.name)
            (context / "Dockerfile").write_bytes(dockerfile)
            (context / "nvidia_entrypoint.sh").write_bytes(entrypoint)
            (context / "nvidia_entrypoint.sh").chmod(0o755)
            docker("build", "--rm", "--force-rm", "-t", standin.tag, "--label", f"{LABEL}={inputs}",
                   "--label", f"org.repogen.standin.pairing={standin.label}", str(context), timeout=1800)  # fmt: skip
        finally:
            shutil.rmtree(context, ignore_errors=True)
        found = _labelled(docker, standin.tag, inputs)
        assert found is not None, standin.tag
        if previous and previous["Id"] != found["Id"]:  # the stale build, unless a container still uses it
            docker("image", "rm", str(previous["Id"]), check=False, timeout=300)
        seconds = time.monotonic() - start
        log(f"stand-in: built {standin.tag} ({standin.label}) in {seconds:.0f} s")
        return StandInImage(standin, str(found["Id"]), int(found["Size"]), seconds)


def main(argv: list[str]) -> int:
    """Build (or find up to date) the stand-ins named, all by default, and print each with its size."""
    try:
        for key in argv or [s.tag for s in STANDINS]:
            image = ensure_standin(key)
            how = f"built in {image.built_s:.0f} s" if image.built_s is not None else "up to date"
            print(f"{image.tag}: {image.standin.label}, {image.size / 1e6:.0f} MB, {how}")
    except (DockerError, LookupError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
