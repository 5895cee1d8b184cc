"""What the image installs for a repository that does not ship it (``--provided``): from where it comes from.

A PyTorch build (``torch==2.13.0+cpu``) installs from PyTorch's index for its label, the user's
``--index-url``/``--find-links`` replace every source repogen would add, a local label nobody publishes
is refused at deploy; a CUDA build for another major than the target's fails (deploy, validate, build),
a CPU build on a ``KIND_GPU`` model warns, and the builder's pip finds a PyTorch build on PyTorch's
index. Played end to end on Docker in tests/containers/test_provided_image.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repogen.build import build_app
from repogen.deploy import DeployError, DeployOptions, generate
from repogen.deploy.files import DOCKERFILE
from repogen.errors import UnreachableContainersError, UsageError
from repogen.ondisk import compatibility
from repogen.ondisk.reader import read_repository
from repogen.packages import resolve, wheels
from repogen.packages.indexes import PackageIndexes, is_cpu_build, local_label, pytorch_index, unindexed
from repogen.packages.options import PackageOptions
from repogen.packages.packager import Packager
from repogen.triton.releases import get_release
from repogen.triton.targets import resolve_targets

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = "examples/quickstart/app.py:models"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("provided") / "model_repository"
    build_app(str(ROOT / QUICKSTART), out)
    return out


def _with(built: Path, tmp_path: Path, requirements: dict[str, str], gpu: bool = False) -> Path:
    """The quickstart with ``requirements`` recorded for AddSub (not shipped: the image installs them)."""
    copy = tmp_path / "model_repository"
    shutil.copytree(built, copy)
    meta = copy / "AddSub" / "1" / "model.json"
    data = json.loads(meta.read_text())
    data["requirements"] = requirements
    meta.write_text(json.dumps(data))
    if gpu:
        config = copy / "AddSub" / "config.pbtxt"
        config.write_text(config.read_text().replace("KIND_CPU", "KIND_GPU"))
    return copy


def _run_line(repository: Path, **options: object) -> str:
    options.setdefault("context", repository.parent)
    text = generate(repository, DeployOptions(docker=True, **options)).files[DOCKERFILE]  # type: ignore[arg-type]
    return "\n".join(line for line in text.splitlines() if "pip install" in line or line.startswith("COPY /"))


def test_labels_and_the_index_that_has_them() -> None:
    assert local_label("2.13.0+cpu") == "cpu" and local_label("2.13.0") is None
    assert pytorch_index("torch", "2.13.0+cpu") == "https://download.pytorch.org/whl/cpu"
    assert pytorch_index("Torch-Vision".replace("-", ""), "0.28.0+cu130") == "https://download.pytorch.org/whl/cu130"
    assert pytorch_index("torchaudio", "2.13.0+rocm6.4") == "https://download.pytorch.org/whl/rocm6.4"
    assert pytorch_index("torch", "2.13.0") is None  # PyPI's
    assert pytorch_index("tinylib", "1.0+cpu") is None  # PyTorch publishes its own distributions only
    assert pytorch_index("torch", "2.13.0+mybuild") is None
    assert unindexed(["torch==2.13.0+cpu", "tinylib==1.0+cpu", "pandas==2.2.3"]) == ["tinylib==1.0+cpu"]
    assert is_cpu_build("2.13.0+cpu") and is_cpu_build("2.1.0+cpu.cxx11.abi") and not is_cpu_build("2.13.0+cu126")


def test_a_pytorch_build_installs_from_pytorch_s_index(built: Path, tmp_path: Path) -> None:
    repository = _with(built, tmp_path, {"torch": "torch==2.13.0+cpu", "pandas": "pandas==2.2.3"})
    assert _run_line(repository) == (
        "RUN python3 -m pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu "
        "pandas==2.2.3 torch==2.13.0+cpu"
    )
    app = _run_line(repository, app=QUICKSTART, context=ROOT, output_dir=ROOT / "deploy").splitlines()
    assert [line for line in app if "torch" in line] == [  # the build stage imports it too
        "RUN python3 -m pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu "
        "pandas==2.2.3 torch==2.13.0+cpu"
    ] * 2


def test_the_user_s_sources_replace_every_other(built: Path, tmp_path: Path) -> None:
    repository = _with(built, tmp_path, {"torch": "torch==2.13.0+cpu", "tiny": "tinylib==1.0+cpu"})
    mirror = PackageIndexes(index_url="http://mirror.internal/simple", find_links=("https://wheels.internal/",))
    assert _run_line(repository, indexes=mirror) == (
        "RUN python3 -m pip install --no-cache-dir --index-url http://mirror.internal/simple --find-links "
        "https://wheels.internal/ tinylib==1.0+cpu torch==2.13.0+cpu"
    )
    wheels = tmp_path / "wheels"
    wheels.mkdir()  # a directory of the build context: copied into the image, then read there
    text = _run_line(repository, indexes=PackageIndexes(find_links=(str(wheels),)))
    assert text == (
        "RUN python3 -m pip install --no-cache-dir --find-links /tmp/repogen-find-links/0 tinylib==1.0+cpu "
        "torch==2.13.0+cpu"
    )
    full = generate(repository, DeployOptions(docker=True, context=tmp_path, indexes=PackageIndexes(
        find_links=(str(wheels),)))).files[DOCKERFILE]  # fmt: skip
    assert "COPY wheels /tmp/repogen-find-links/0\nRUN python3 -m pip install" in full
    with pytest.raises(UsageError, match="is outside the Docker build context"):
        generate(repository, DeployOptions(docker=True, context=repository, indexes=PackageIndexes(
            find_links=(str(wheels),))))  # fmt: skip


def test_a_label_no_index_publishes_is_refused(built: Path, tmp_path: Path) -> None:
    repository = _with(built, tmp_path, {"tiny": "tinylib==1.0+cpu"})
    with pytest.raises(DeployError) as caught:
        _run_line(repository)
    assert str(caught.value).startswith(
        "tinylib==1.0+cpu: a local version label, which PyPI never has and no package index repogen knows of "
        "publishes (PyTorch's does for its own +cpu, +cu126, ... builds), so `pip install` in the image cannot find "
        "it; nothing was written. Pass --index-url or --find-links"
    )


def test_a_cuda_build_must_match_the_target_s_cuda(built: Path, tmp_path: Path) -> None:
    repository = _with(built, tmp_path, {"torch": "torch==2.13.0+cu126"})
    with pytest.raises(DeployError) as caught:
        _run_line(repository, triton_release="26.11")
    message = str(caught.value)
    assert message.startswith(
        "torch==2.13.0+cu126, which the image installs, is a CUDA 12 build (its version's +cu126), but tritonserver "
        "2.75.0 (NGC 26.11) (nvcr.io/nvidia/tritonserver:26.11-py3) has CUDA 13, where it fails on the GPU. Install "
        "its CUDA 13 build where you build (torch==<version>+cu130 from https://download.pytorch.org/whl/cu130) and "
        "build again, or deploy to a CUDA 12 release (--triton-release 25.07)."
    ), message
    assert "--extra-index-url https://download.pytorch.org/whl/cu126" in _run_line(repository, triton_release="25.07")
    fit = compatibility.fit(read_repository(repository), get_release("26.11"))  # validate asks the same
    assert len(fit.errors) == 1 and "CUDA 12" in fit.errors[0]
    assert compatibility.fit(read_repository(repository), get_release("25.07")).errors == []


def test_a_cpu_build_on_a_gpu_model_warns(built: Path, tmp_path: Path) -> None:
    repository = _with(built, tmp_path, {"torch": "torch==2.13.0+cpu"}, gpu=True)
    warnings = generate(repository, DeployOptions(docker=True, context=repository.parent)).warnings
    assert warnings == (
        "model 'AddSub' runs KIND_GPU instances, but torch==2.13.0+cpu is a CPU-only build: its tensors stay on the "
        "CPU. Install the CUDA 13 build where you build (torch==<version>+cu130 from "
        "https://download.pytorch.org/whl/cu130) and build again, or give the model KIND_CPU instances",
    )
    on_cpu = _with(built, tmp_path / "cpu", {"torch": "torch==2.13.0+cpu"})
    assert generate(on_cpu, DeployOptions(docker=True, context=on_cpu.parent)).warnings == ()


def test_the_build_leaves_out_the_containers_a_provided_cuda_build_cannot_serve(tmp_path: Path) -> None:
    def packager(release: str | None) -> Packager:
        return Packager(PackageOptions(provided=("torch",)), resolve_targets(release), tmp_path)

    requirements = {"torch": "torch==2.13.0+cu130", "numpy": "numpy==1.26.4"}
    with pytest.raises(UnreachableContainersError) as caught:
        packager(None).ship("model 'M'", requirements)
    assert {c.cuda for c in caught.value.containers} == {12}  # narrowed to the CUDA 13 ones, with a warning
    assert caught.value.reason == "torch==2.13.0+cu130 (provided by the image) is a CUDA 13 build"
    assert str(caught.value) == (
        "model 'M' imports torch==2.13.0+cu130, which your image provides (--provided): a CUDA 13 build (its "
        "version's +cu130), but tritonserver 2.39.0 (NGC 23.10) has CUDA 12, so it fails there on the GPU. Install its "
        "CUDA 12 build where you build (torch==<version>+cu129 from https://download.pytorch.org/whl/cu129), or target "
        "a container with CUDA 13 (--triton-release 26.11 or another CUDA 13 release)"
    )
    assert packager("26.11").ship("model 'M'", requirements) == {}  # provided: nothing ships, CUDA 13 matches
    assert packager("26.11").ship("model 'M'", {"torch": "torch==2.13.0+cpu"}) == {}


def test_the_builder_s_pip_looks_on_pytorch_s_index_for_its_builds() -> None:
    direct = "ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu (from versions: 2.9.1)"
    assert resolve._pytorch_indexes(direct, []) == ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    pulled = "The user requested (constraint) torch==2.13.0+cu126\nThe user requested (constraint) pandas==2.2.3"
    assert resolve._pytorch_indexes(pulled, []) == ["--extra-index-url", "https://download.pytorch.org/whl/cu126"]
    used = ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert resolve._pytorch_indexes(direct, used) == []  # asked there already: pip's own message stands
    other = "ERROR: Could not find a version that satisfies the requirement tinylib==1.0+cpu (from versions: none)"
    assert resolve._pytorch_indexes(other, []) == []


def test_over_a_gigabyte_per_container_python_is_named_with_its_heaviest(tmp_path: Path) -> None:
    from repogen.packages.packager import ShippedTree
    from repogen.packages.resolve import Pin

    packager = Packager(PackageOptions(), resolve_targets(None), tmp_path)
    for target in packager.targets:
        torch = Pin("torch", "2.13.0", "torch.whl", f"t{target.python}", "https://x/torch.whl")
        small = Pin("filelock", "3.20.0", "filelock.whl", "f", "https://x/filelock.whl")
        big = 1_900_000_000 if target.python == "3.12" else 800_000_000
        overlay = wheels.bytecode_root(packager.cache, torch.sha256, target.python)
        sizes = {  # where wheels.unpack puts each wheel's files, and wheels.bytecode its compiled ones
            f"{wheels.unpacked_root(packager.cache, torch.sha256)}/torch/lib.so": big - 100_000_000,
            f"{overlay}/torch/__pycache__/__init__.cpython-312.pyc": 100_000_000,
            f"{wheels.unpacked_root(packager.cache, small.sha256)}/filelock/__init__.py": 4_000,
        }
        tree = ShippedTree(target, (torch, small), {}, {}, False, sizes)
        packager._shipped[("torch==2.13.0",)] = {**packager._shipped.get(("torch==2.13.0",), {}), target.tag: tree}
    assert packager.oversized(10**9) == ["Python 3.12 (x86_64): 1.9 GB, torch 2.13.0 1.9 GB, filelock 3.20.0 0.0 GB"]
    assert packager.oversized(10**10) == []
