"""python_backend's own DLPack on the real stub, in every CI run: JAX tensors in and out (tests/apps/jax).

The unit tests go through repogen's local shim, whose ``from_dlpack`` is the host's numpy; the other integration
tests send numpy. Here a BF16 tensor, which numpy cannot hold, must cross the stub both ways: in through
``pb_utils.Tensor.to_dlpack`` into ``jax.numpy.from_dlpack``, out through ``pb_utils.Tensor.from_dlpack`` of a jax
array. JAX (with jaxlib, scipy and ml_dtypes) is shipped in the repository, built for the pairing's Python by
the default build, as a user's would be; the server's Python has numpy alone.

python_backend takes BF16 from r24.08 on: on 2.39 and 2.41 the same requests are refused with the stub's own
message, as the build's warning and ``repogen validate`` say (``python_backend.BF16_FROM``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from repogen.testing.builders import build_with
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.packages_app import builder_python
from repogen.testing.server_under_test import pairing_under_test
from repogen.triton import python_backend

pytestmark = [pytest.mark.integration, pytest.mark.smoke]

APP = "tests/apps/jax/app.py:models"
# wheels for Python 3.10 and 3.12 that stand on numpy 1.26, as the servers' numpy is (jax 0.7 needs numpy 2)
JAX_PACKAGES = ("jax[cpu]==0.6.2", "ml_dtypes==0.5.4", "scipy==1.15.3")
BF16_SERVED = python_backend.has_bf16(pairing_under_test().release)


@pytest.fixture(scope="module")
def server(serve, repogen_cache_dir, tmp_path_factory):
    repo = tmp_path_factory.mktemp("jax") / "repo"
    built = build_with(builder_python(), APP, repo, cache_dir=repogen_cache_dir, packages=JAX_PACKAGES)
    assert "Built 2 model(s)" in built.stdout, built.stdout + built.stderr
    assert "NGC 23.10-24.07 serve it without answering" in built.stderr, built.stderr  # Bf16's, and JaxOut's
    return serve(repo)


def _bf16(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=ml_dtypes.bfloat16)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bf16_crosses_the_stub_both_ways_as_jax_arrays(server, protocol):
    if not BF16_SERVED:
        with pytest.raises(InferenceServerException, match=r"TYPE_BF16 not currently supported\."):
            infer(protocol, server, "Bf16", {"h": _bf16([[1, 2, 3]])})
        return
    out = infer(protocol, server, "Bf16", {"h": _bf16([[1, 2, 3], [4, 5, 0.5]])})
    assert out["h"].dtype == ml_dtypes.bfloat16, out["h"].dtype
    assert out["h"].astype(np.float32).tolist() == [[2, 4, 6], [8, 10, 1]]
    assert out["kind"].tolist() == [[b"jax.Array bfloat16 cpu"]] * 2  # the callable was handed a jax array


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_jax_arrays_go_out_float32_and_bf16(server, protocol):
    x = np.array([[-1.0, 3.0], [2.0, -4.5]], dtype=np.float32)
    if not BF16_SERVED:  # the stub's from_dlpack has no BF16 either
        with pytest.raises(InferenceServerException, match=r"(?s)output 'half' is declared BF16.*Dtype is invalid"):
            infer(protocol, server, "JaxOut", {"x": x})
        return
    out = infer(protocol, server, "JaxOut", {"x": x})
    assert out["y"].dtype == np.float32 and out["y"].tolist() == [[1, 4], [3, 1]]
    assert out["half"].dtype == ml_dtypes.bfloat16
    assert out["half"].astype(np.float32).tolist() == [[-0.5, 1.5], [1, -2.25]]
