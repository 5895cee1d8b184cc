"""Pod start to READY: a repository from a pulled modelcar image vs KServe's storage initializer's copy.

Both on the stand-in of the newest NGC image (``repogen.testing.standin``), on the Docker engine, for the quickstart
and the packages app (scikit-learn, onnxruntime, PyYAML shipped), ``--runs`` times each, medians:

* modelcar: the image already pulled (KServe pre-pulls it in an init container; a node pulls it once and keeps
  it), then the pod as KServe's webhook makes it: a pause container, the server with the InferenceService's
  command (waits for ``/mnt/models``), the modelcar that links it; from the server container's start to READY.
* storage initializer: the repository copied file by file into an empty directory (each file read and written
  on its own, owned by uid 1000, as the initializer writes a download; from the local disk here, so a network
  download only adds to it), then the server on it; from the copy's start to READY.

Also the image's size (what a registry stores and a node pulls) beside the repository's files, and the pull.
``python bench/modelcar.py [--runs 3]``; prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repogen.deploy.oci_image import MODELCAR_COMMAND
from repogen.server.provision.install import default_cache_dir
from repogen.server.running.docker import Container, Engine, engine, removing, unique_name
from repogen.testing.packages_app import build_packages_app
from repogen.testing.registry import local_registry
from repogen.testing.standin import ensure_standin
from repogen.triton.releases import NEWEST
from repogen.triton.shm import shm_size_bytes

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_ARGS = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080"]
USER = ["--user", "1010", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
PREFIX = os.environ.get("REPOGEN_DOCKER_PREFIX", "repogen-bench")
"""Start of every container name (on an engine several checkouts share, give each its own)."""
WAIT = 'until [ -e /mnt/models/ ]; do sleep 0.2; done; exec "$0" "$@"'


def _repogen(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "repogen", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def _shm(repository: Path) -> str:
    from repogen.ondisk.reader import read_repository

    return f"--shm-size={shm_size_bytes(read_repository(repository).python_instances()) >> 20}m"


def _server(docker: Engine, standin: str, flags: list[str], args: list[str] = RUNTIME_ARGS) -> Container:
    return docker.run(standin, args, name=unique_name(f"{PREFIX}-server"), publish={"http": 8080, "grpc": 9000},
                      flags=flags)  # fmt: skip


def modelcar_s(docker: Engine, reference: str, standin: str, repository: Path, work: Path) -> float:
    mnt = Path(tempfile.mkdtemp(dir=work))
    mnt.chmod(0o777)
    containers = []
    try:
        containers.append(docker.run(reference, ["sh", "-c", "sleep infinity"], name=unique_name(f"{PREFIX}-pause"),
                                     publish={}, flags=USER))  # fmt: skip
        pid = ["--pid", f"container:{containers[0].name}", "-v", f"{mnt}:/mnt"]
        start = time.monotonic()
        server = _server(
            docker, standin, [*USER, *pid, _shm(repository), "--entrypoint", "/bin/sh"], ["-c", WAIT, *RUNTIME_ARGS]
        )
        containers.append(server)
        containers.append(docker.run(reference, list(MODELCAR_COMMAND), name=unique_name(f"{PREFIX}-car"),
                                     publish={}, flags=[*USER, *pid]))  # fmt: skip
        server.wait_ready(600)
        return time.monotonic() - start
    finally:
        for container in reversed(containers):
            container.remove()


def copy_file_by_file(source: Path, target: Path) -> None:
    for folder, _, files in os.walk(source):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / relative / name).write_bytes((Path(folder) / name).read_bytes())
            os.chown(target / relative / name, 1000, 1000)


def initializer_s(docker: Engine, standin: str, repository: Path, work: Path) -> float:
    copy = Path(tempfile.mkdtemp(dir=work)) / "models"
    start = time.monotonic()
    copy_file_by_file(repository, copy)
    flags = ["--user", "1000", "--cap-drop", "ALL", "-v", f"{copy}:/mnt/models:ro", _shm(repository)]
    with _server(docker, standin, flags) as server:
        server.wait_ready(600)
        return time.monotonic() - start


def _apps(work: Path) -> dict[str, Path]:
    quickstart = work / "quickstart" / "model_repository"
    _repogen("build", "examples/quickstart/app.py:models", "-o", str(quickstart))
    packages = work / "packages" / "model_repository"
    build_packages_app(default_cache_dir(), packages)
    return {"quickstart": quickstart, "packages": packages}


def _files(repository: Path) -> int:
    return sum(p.stat().st_size for p in repository.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    docker = engine()
    standin = ensure_standin(NEWEST.ngc, docker=docker, log=lambda _: None).tag
    rows = []
    with tempfile.TemporaryDirectory(prefix="repogen-bench-modelcar-") as tmp, local_registry(Path(tmp)) as registry:
        work = Path(tmp)
        for name, repository in _apps(work).items():
            reference = _repogen("push", str(repository), f"{registry.host}/bench-{name}:1", "--insecure").strip()
            image = work / f"{name}.oci.tar"
            _repogen("image", str(repository), "-o", str(image))
            with removing(docker, "image", reference):
                start = time.monotonic()
                docker("pull", reference, timeout=900)
                pulled = time.monotonic() - start
                car = [modelcar_s(docker, reference, standin, repository, work) for _ in range(runs)]
                copy = [initializer_s(docker, standin, repository, work) for _ in range(runs)]
            blobs = image.stat().st_size
            rows.append((name, statistics.median(car), statistics.median(copy), pulled, blobs, _files(repository)))
            shutil.rmtree(work / name, ignore_errors=True)
    print(f"stand-in {standin}, {runs} runs each, medians\n")
    print(
        "| app | modelcar: start to READY | copy file by file, then start to READY | ratio | docker pull (once "
        "per node) | image (tarball) | repository's files |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, car, copy, pulled, blobs, files in rows:
        print(
            f"| {name} | {car:.1f} s | {copy:.1f} s | {copy / car:.2f}x | {pulled:.1f} s | {blobs / 1e6:.1f} MB | "
            f"{files / 1e6:.1f} MB |"
        )


if __name__ == "__main__":
    main()
