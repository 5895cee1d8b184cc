"""Repositories that survive how KServe copies them, served as KServe's Triton runtime.

KServe's storage initializer (every ``storageUri`` but ``pvc://``) downloads a directory object by
object: no hard links, no modes, no symlinks, files written by uid 1000, and its S3 and Azure downloads
skip zero-byte objects; one ``.tar`` object it unpacks with Python's ``filter="data"`` (links kept).
Both copies of the app shipping scikit-learn, onnxruntime and PyYAML (its trees hold 370 empty Python
sources in the wheels) are made here into a directory, then served by the stand-in for the
InferenceService's ``runtimeVersion`` run as KServe's ``kserve-tritonserver`` runtime runs it
(``--model-store=/mnt/models`` read-only, ports 8080/9000, uid 1000, ``runAsNonRoot``, every
capability dropped) with the predictor's resources, ``/dev/shm`` volume and liveness probe from the
InferenceService `repogen deploy --kserve` writes; every answer over HTTP and gRPC is the builder's,
and the liveness probe passes. The archive is made with the ``tar`` command the manifest's header
gives, and both sizes the header states are what the copies stored.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from runs import PACKAGES_INPUTS, PREFIX, assert_same, secrets_of

from repogen.server.running.docker import unique_name
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.pod import Pod

KSERVE_UID = 1000
RUNTIME = {  # KServe's kserve-tritonserver ServingRuntime (config/runtimes), as its predictor container runs
    "name": "kserve-container",
    "args": ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
             "--allow-grpc=true", "--allow-http=true"],
    "ports": [{"name": "http", "containerPort": 8080}, {"name": "grpc", "containerPort": 9000}],
    "securityContext": {"runAsUser": KSERVE_UID, "runAsNonRoot": True, "allowPrivilegeEscalation": False,
                        "privileged": False, "capabilities": {"drop": ["ALL"]}},
}  # fmt: skip


def object_store_copy(source: Path, target: Path, skip_empty: bool) -> tuple[int, int]:
    """What the storage initializer makes of a directory URI: (bytes written, zero-byte files skipped)."""
    written = skipped = 0
    for folder, _, files in os.walk(source, followlinks=True):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        os.chown(target / relative, KSERVE_UID, KSERVE_UID)
        for name in files:
            data = (Path(folder) / name).read_bytes()  # one object, downloaded on its own
            if skip_empty and not data:
                skipped += 1
                continue
            (target / relative / name).write_bytes(data)  # its mode is the writer's umask's, nothing carried
            os.chown(target / relative / name, KSERVE_UID, KSERVE_UID)
            written += len(data)
    return written, skipped


def archive_copy(archive: Path, target: Path) -> None:
    """A single .tar object: KServe unpacks it with Python's data filter (hard links and exec bits kept)."""
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    for folder, dirs, files in os.walk(target):
        for name in [*dirs, *files]:
            os.chown(os.path.join(folder, name), KSERVE_UID, KSERVE_UID, follow_symlinks=False)


@pytest.fixture(scope="module")
def deployed(packages_app, tmp_path_factory):
    """The app as test_used_by_line.py serves it (a tree for each container Python), and its InferenceService."""
    repository = packages_app()
    manifests = {}
    for uri in ("s3://models/packages", "s3://models/packages.tar"):
        manifests[uri] = subprocess.run(
            [sys.executable, "-m", "repogen", "deploy", repository.name, "--kserve", "--storage-uri", uri],
            cwd=repository.parent, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    return repository, manifests


@pytest.fixture(scope="module", params=["s3", "archive"])
def served(request, deployed, standin_image, docker_engine, tmp_path_factory):
    repository, manifests = deployed
    copy = tmp_path_factory.mktemp(f"kserve-{request.param}") / "models"
    start = time.monotonic()
    if request.param == "s3":
        manifest = manifests["s3://models/packages"]
        stored, skipped = object_store_copy(repository, copy, skip_empty=True)
    else:
        manifest = manifests["s3://models/packages.tar"]
        command = re.search(r"(tar -C \S+ -cf (\S+) \.)", manifest)
        subprocess.run(command[1], shell=True, cwd=repository.parent, check=True)  # as the header says
        archive = repository.parent / command[2]
        stored, skipped = archive.stat().st_size, 0
        archive_copy(archive, copy)
        archive.unlink()
    print(f"{request.param}: stored {stored / 1e6:.1f} MB, {skipped} empty file(s) skipped, "
          f"copied in {time.monotonic() - start:.0f} s")  # fmt: skip
    isvc = yaml.safe_load(manifest)
    predictor = isvc["spec"]["predictor"]
    model = predictor["model"]
    container = {**RUNTIME, **{key: model[key] for key in ("resources", "volumeMounts", "livenessProbe")},
                 "args": [*RUNTIME["args"], *model.get("args", [])], "env": model.get("env", [])}  # fmt: skip
    # KServe appends the model's args (the restriction flags) to the runtime's and merges its env (the key)
    pod = Pod({"containers": [container], "volumes": predictor["volumes"]}, secrets=secrets_of(manifest))
    image = standin_image(model["runtimeVersion"]).tag
    with pod.run(docker_engine, unique_name(f"{PREFIX}-kserve-{request.param}"), image=image,
                 extra=["-v", f"{copy}:/mnt/models:ro"]) as running:  # fmt: skip
        start = time.monotonic()
        running.wait_ready(300)
        print(f"{request.param}: ready {time.monotonic() - start:.0f} s after the start")
        yield request.param, manifest, stored, skipped, pod


def test_no_python_source_ships_empty(deployed):
    repository, _ = deployed
    sources = list(repository.rglob("*.py"))
    assert len(sources) > 1000 and not [path for path in sources if path.stat().st_size == 0]


def test_what_each_way_stores_is_what_the_manifest_says(served):
    way, manifest, stored, skipped, _ = served
    if way == "s3":
        said = re.search(r"every hard link becomes a copy \(([\d.]+) MB\)", manifest)[1]
        assert skipped >= 1  # py.typed, which the runtime accepts missing; no empty Python source ships
    else:
        said = re.search(r"a \.tar keeps the hard links \(([\d.]+) MB", manifest)[1]
    assert f"{stored / 1e6:.1f}" == said


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_copy_serves_as_the_builder_computed(served, packages_expected, protocol):
    _, _, _, _, pod = served
    for model, inputs in PACKAGES_INPUTS.items():
        answer = infer(protocol, pod.container, model, inputs)
        assert_same(answer, {n: packages_expected[f"{model}.{n}"] for n in answer}, model)


def test_the_inference_services_liveness_probe_passes(served):
    _, _, _, _, pod = served
    result = pod.probe("livenessProbe")
    assert result.passed, result
    assert pod.container.exec("id", "-u").stdout.strip() == str(KSERVE_UID)
