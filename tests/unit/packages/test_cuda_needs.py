"""Which CUDA major a shipped tree needs (repogen/packages/cuda.py), read from real ELF files built here, and
the build's answer when a targeted container has another (CUDA 13 from 25.08)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogen.errors import UnreachableContainersError
from repogen.packages import PackageOptions, Packager
from repogen.packages.cuda import cuda_needs, elf_needed
from repogen.packages.wheel_targets import WheelTarget
from repogen.testing.prerequisites import require_tool
from repogen.triton.releases import RELEASES
from repogen.triton.targets import resolve_targets


def _library(directory: Path, name: str, needs: tuple[str, ...] = (), soname: str = "") -> Path:
    """A shared library named ``name`` whose DT_NEEDED lists ``needs`` (each linked from a stub made here)."""
    gcc = require_tool("gcc", "gcc", "link a test library")
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f"{name}.c"
    source.write_text("int answer(void) { return 42; }\n")
    links = []
    for needed in needs:
        stub = directory / "stubs" / needed
        if not stub.exists():
            stub.parent.mkdir(exist_ok=True)
            empty = directory / "stubs" / "empty.c"
            empty.write_text("int cuda_stub(void) { return 0; }\n")
            subprocess.run([gcc, "-shared", "-fPIC", f"-Wl,-soname,{needed}", "-o", str(stub), str(empty)], check=True)
        links.append(f"-l:{needed}")
    output = directory / name
    flags = [f"-Wl,-soname,{soname}"] if soname else []
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-Wl,--no-as-needed", *flags, "-o", str(output), str(source),
         f"-L{directory / 'stubs'}", *links],
        check=True,
    )  # fmt: skip
    return output


def test_elf_needed_reads_the_dynamic_section(tmp_path: Path) -> None:
    lib = _library(tmp_path, "libort_cuda.so", ("libcudart.so.12", "libcublasLt.so.12"))
    assert {"libcudart.so.12", "libcublasLt.so.12"} <= set(elf_needed(str(lib)))
    text = tmp_path / "notes.so"
    text.write_text("not an ELF file")
    assert elf_needed(str(text)) == () and elf_needed(str(tmp_path / "missing.so")) == ()


def test_a_tree_needs_the_cuda_major_its_libraries_link_unless_it_ships_the_runtime(tmp_path: Path) -> None:
    lib = _library(tmp_path / "ort", "libort_cuda.so", ("libcudart.so.12", "libcufft.so.11"))
    files = {"onnxruntime/capi/libort_cuda.so": str(lib), "onnxruntime/__init__.py": str(tmp_path / "x.py")}
    needs = cuda_needs([("onnxruntime-gpu", "1.22.0", files)])
    assert needs.majors == (12,)  # libcufft's soname numbers itself: not read as a CUDA major
    assert needs.describe(12) == "onnxruntime-gpu 1.22.0 (libcudart.so.12 in onnxruntime/capi/libort_cuda.so)"
    runtime = _library(tmp_path / "rt", "libcudart.so.12", soname="libcudart.so.12")
    cudart = {"nvidia/cuda_runtime/lib/libcudart.so.12": str(runtime)}
    shipped = cuda_needs([("onnxruntime-gpu", "1.22.0", files), ("nvidia-cuda-runtime-cu12", "12.8.90", cudart)])
    assert shipped.majors == ()  # PyPI's CUDA runtime travels with it: nothing needed of the container


@pytest.mark.parametrize(
    ("name", "version", "major"), [("cupy-cuda12x", "13.4.1", 12), ("jax-cuda13-plugin", "0.8.0", 13),
                                   ("torch", "2.13.0+cu130", 13), ("torch", "2.7.0+cu126", 12)],
)  # fmt: skip
def test_wheels_that_dlopen_cuda_are_read_by_name_or_local_version(name: str, version: str, major: int) -> None:
    assert cuda_needs([(name, version, {})]).majors == (major,)
    assert cuda_needs([("torch", "2.13.0+cpu", {})]).majors == ()


def test_containers_of_another_cuda_major_are_unreachable_named_with_the_fix(tmp_path: Path) -> None:
    lib = _library(tmp_path, "libort_cuda.so", ("libcudart.so.12",))
    needs = cuda_needs([("onnxruntime-gpu", "1.22.0", {"capi/libort_cuda.so": str(lib)})])
    targets = resolve_targets()
    packager = Packager(PackageOptions(), targets, tmp_path / "cache")
    py312 = WheelTarget("3.12", "x86_64", "2.39", "NGC 24.11+")
    with pytest.raises(UnreachableContainersError) as caught:
        packager._check_cuda("model 'Detect'", py312, needs)
    cuda13 = tuple(r for r in RELEASES if r.python == "3.12" and r.cuda == 13)
    last12 = [r for r in RELEASES if r.python == "3.12" and r.cuda == 12][-1]
    assert caught.value.containers == cuda13
    message = str(caught.value)
    assert message.startswith("model 'Detect' ships onnxruntime-gpu 1.22.0 (libcudart.so.12 in capi/libort_cuda.so): "
                              f"built for CUDA 12, but {cuda13[0].label} has CUDA 13 (libcudart.so.13)")  # fmt: skip
    assert f"target a container with CUDA 12 (--triton-release {last12.ngc} or another CUDA 12 release)" in message
    assert "pass --provided NAME if your image has it" in message
    assert caught.value.reason == "onnxruntime-gpu 1.22.0 (libcudart.so.12 in capi/libort_cuda.so) needs CUDA 12"
    narrowed = targets.without(caught.value.containers)
    assert narrowed is not None and all(r.cuda == 12 for r in narrowed.containers)
    Packager(PackageOptions(), narrowed, tmp_path / "cache")._check_cuda("model 'Detect'", py312, needs)  # fits now
