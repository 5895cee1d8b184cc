"""cupy's arrays on the GPU: tests/apps/gpu/cupy_app.py, where the server's Python can import cupy beside its numpy
1.26 (cupy 13; cupy 14 needs numpy 2, which NGC's containers pin away)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer

#: In the server's Python: numpy's version, the installed cupy distribution's version (read from its metadata, so
#: known even where cupy does not import), then whether cupy imports and why not.
PROBE = """
import importlib.metadata as metadata, json, numpy
found = {"numpy": numpy.__version__, "cupy": None, "error": None}
for dist in metadata.packages_distributions().get("cupy", [])[:1]:
    found["cupy"] = metadata.version(dist)
try:
    import cupy
except Exception as exc:
    found["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(found))
"""


def cupy_refuses_numpy_1(found: dict) -> bool:
    """The one reason a server's Python may lack a working cupy: cupy 14 requires numpy 2, NGC's containers pin 1."""
    major = lambda version: int(version.split(".")[0])  # noqa: E731
    return found["cupy"] is not None and major(found["cupy"]) >= 14 and major(found["numpy"]) < 2


@pytest.fixture(scope="module")
def server(gpu_venv, gpu_build, gpu_serve):
    python = gpu_venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.fail(f"{python} could not report its numpy and cupy: {probe.stderr.strip()}", pytrace=False)
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    if found["error"] is not None:
        if cupy_refuses_numpy_1(found):
            pytest.skip(f"cupy {found['cupy']} requires numpy 2, the server's Python has numpy {found['numpy']} (as "
                        "NGC's containers): cupy 13 serves there")  # fmt: skip
        installed = found["cupy"] or "(not installed)"
        pytest.fail(f"cupy {installed} does not import in {python} beside numpy {found['numpy']}: "
                    f"{found['error']}; install cupy 13 there (docs/gpu.md)", pytrace=False)  # fmt: skip
    return gpu_serve(gpu_build("tests/apps/gpu/cupy_app.py:models"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_cupy_output_is_sent_from_the_gpu(server, protocol):
    assert infer(protocol, server, "CupyOut", {"x": np.array([[1.0], [2.0]], dtype=np.float32)})["y"].tolist() == [
        [4.0],
        [8.0],
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cupy_inputs_arrive_on_the_gpu(server, protocol):
    out = infer(protocol, server, "CupyIn", {"x": np.array([[1.0], [2.0]], dtype=np.float32)})
    assert (out["y"].tolist(), out["on_gpu"].tolist()) == ([[5.0], [10.0]], [[1], [1]])
