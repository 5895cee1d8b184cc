"""What differs between the supported tritonserver releases, proven on whichever pairing is under test.

CI runs this module on tritonserver 2.39.0, 2.41.0 and 2.51.0 with Python 3.10 and on 2.51.0 with
Python 3.12 (``REPOGEN_TRITON_RELEASE``, ``REPOGEN_SERVER_PYTHON``). Measured:

* All three Python backends have ``InferenceRequest.parameters()`` and forward the headers that
  match ``--http/grpc-header-forward-pattern`` (2.39.0 included), so int, bool and string
  parameters reach ``request.parameters`` everywhere. A backend without ``parameters()`` would
  still get a clear ``InferenceError`` (tests/unit/runtime/test_request.py).
* The 2.39.0 and 2.41.0 frontends refuse FP64 request parameters (``temperature=0.5``) with
  their own message before any model runs; 2.51.0 passes them to the callable.
* 2.39.0 and 2.41.0 pass an empty batch on to the model (see test_bad_traffic.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer, make_client
from repogen.testing.server_under_test import pairing_under_test, release_at_least, requires_release

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

SERVER_ARGS = ("--http-header-forward-pattern=x-repogen-.*", "--grpc-header-forward-pattern=x-repogen-.*")
X = {"x": np.array([1.0], dtype=np.float32)}
PARAMETERS = {"mode": "fast", "steps": 3, "greedy": True}
FP64_REFUSALS = {
    "http": "parameter 'temperature' has invalid type. It should be either 'int', 'bool', or 'string'.",
    "grpc": "invalid value type for 'temperature' parameter, expected int64_param, bool_param, or string_param.",
}

only_before_2_51 = pytest.mark.skipif(
    release_at_least("2.51.0"), reason="checks the 2.39.0/2.41.0 frontends; 2.51.0 accepts FP64 parameters"
)


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("releases") / "repo"
    cli_build("tests/apps/traffic/app.py:models", repo)
    return serve(repo, extra_args=SERVER_ARGS)


@pytest.fixture(scope="module")
def python_info(serve, tmp_path_factory):
    """The hand-written PythonInfo model's report (it loads on every Python, whatever built the tests)."""
    repo = tmp_path_factory.mktemp("python-info") / "repo"
    shutil.copytree(Path(__file__).resolve().parents[1] / "repos" / "python_info", repo)
    server = serve(repo)
    client = make_client("http", server)
    try:
        version = client.get_server_metadata()["version"]
    finally:
        client.close()
    info = json.loads(infer("grpc", server, "PythonInfo", {"x": np.array([1], dtype=np.int32)})["info"][0])
    return {**info, "server_version": version}


def test_the_server_is_the_pairing_under_test(python_info, triton_install):
    """Guards CI: REPOGEN_TRITON_RELEASE/REPOGEN_SERVER_PYTHON really selected the binary and the Python that answer.

    The stub's libpython is the server venv interpreter's own (LIBDIR first on LD_LIBRARY_PATH), not the
    system's, and its numpy is the container's.
    """
    pairing = pairing_under_test()
    assert python_info["server_version"] == pairing.release.tritonserver
    major, minor, _ = python_info["version"]
    assert f"{major}.{minor}" == pairing.python == triton_install.venv.python_version
    assert python_info["numpy"] == pairing.release.numpy
    assert Path(python_info["prefix"]) == triton_install.venv.path
    maps = Path(f"/proc/{python_info['pid']}/maps").read_text().splitlines()
    libpythons = {Path(line.split()[-1]) for line in maps if "/libpython" in line}
    assert len(libpythons) == 1, libpythons
    (libpython,) = libpythons
    assert libpython.name.startswith(f"libpython{pairing.python}.so"), libpython
    assert libpython.parent == Path(triton_install.venv.libdir), libpython


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_parameters_and_forwarded_headers_reach_the_callable(server, protocol):
    out = infer(protocol, server, "Params", X, parameters=PARAMETERS, headers={"x-repogen-user": "bob", "x-no": "1"})
    assert json.loads(out["parameters"][0]) == {**PARAMETERS, "x-repogen-user": "bob"}


@only_before_2_51
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fp64_parameters_are_refused_by_older_frontends_and_the_model_keeps_serving(server, protocol):
    with pytest.raises(InferenceServerException) as refused:
        infer(protocol, server, "Params", X, parameters={"temperature": 0.5})
    assert FP64_REFUSALS[protocol] in str(refused.value)
    assert json.loads(infer(protocol, server, "Params", X, parameters={"steps": 1})["parameters"][0]) == {"steps": 1}


@requires_release("2.51.0", "FP64 request parameters are refused by the 2.39/2.41 frontends")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fp64_parameters_reach_the_callable(server, protocol):
    out = infer(protocol, server, "Params", X, parameters={"temperature": 0.5})
    assert json.loads(out["parameters"][0]) == {"temperature": 0.5}


def test_two_servers_on_one_host_keep_their_shm_regions_apart(triton_server, triton_install, tmp_path: Path) -> None:
    """Before python_backend r24.04 (2.45) every server named its regions triton_python_backend_shm_region_1, _2...:
    two on one host shared them and aborted (boost::interprocess::lock_exception). Each gets its own prefix now."""
    from test_server_harness import grpc_infer, http_infer, write_repository

    from repogen.triton.python_backend import UUID_REGIONS_FROM, region_prefix_args

    first = triton_server(write_repository(tmp_path / "a"))
    second = triton_server(write_repository(tmp_path / "b"))
    regions = [set(server._stub_regions().values()) for server in (first, second)]
    assert all(regions) and not regions[0] & regions[1], regions
    if region_prefix_args(triton_install.install.release, "x"):  # a release before UUID_REGIONS_FROM
        prefix = f"repogen_{os.getpid()}_"
        assert all(Path(r).name.startswith(prefix) for r in regions[0] | regions[1]), (UUID_REGIONS_FROM, regions)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    for _ in range(20):  # both keep answering while the other works
        np.testing.assert_array_equal(http_infer(first, x)[0], x * 2)
        np.testing.assert_array_equal(grpc_infer(second, x), x * 2)
