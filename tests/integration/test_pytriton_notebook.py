"""PyTriton's notebook (``examples/add_sub_notebook``) after the import swap, its cells replayed as IPython runs them,
on the real server: ``triton = Triton()``, bind, ``run()``, infer; ``stop()``, redefine the callable, bind it again
under the same name, ``run()``, and the answers are the new callable's; ``stop()`` leaves no server and no directory.

The cells are that notebook's shape written here (its unnamed tensors, ``@batch`` over ``**inputs``, PyTriton's
default ports given by ``PYTRITON_TRITON_CONFIG_*`` variables instead); the test sends what its ``ModelClient``
cells send, over HTTP and gRPC.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from serve_cli import group_pids

from repogen import Triton
from repogen.server.running.host import free_ports, pid_alive
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.notebook import run_cells
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

SETUP = [
    # In [1]: the imports, swapped
    """
import numpy as np

from repogen import ModelConfig, Tensor, Triton, batch
""",
    # In [2]:
    """
@batch
def _add_sub(**inputs):
    a_batch, b_batch = inputs.values()
    return {"add": a_batch + b_batch, "sub": a_batch - b_batch}
""",
    # In [3]:
    """
triton = Triton()
""",
]
BIND = """
triton.bind(
    model_name="AddSub",
    infer_func=_add_sub,
    inputs=[Tensor(dtype=np.float32, shape=(-1,)), Tensor(dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="add", dtype=np.float32, shape=(-1,)), Tensor(name="sub", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=128),
)
"""
RUN = "\ntriton.run()\n"
STOP = "\ntriton.stop()\n"
REDEFINE = """
@batch
def _add_sub(**inputs):
    a_batch, b_batch = inputs.values()
    return {"add": (a_batch + b_batch) * 2, "sub": (a_batch - b_batch) * 3}
"""


@pytest.fixture
def notebook(triton_install: TritonInstallation, tmp_path: Path, monkeypatch) -> Iterator[SimpleNamespace]:
    """The kernel's state: ``__main__``'s namespace, its ports (PyTriton's variables), the server pairing under
    test as ``Triton()``'s own default, the notebook's directory as the working one."""
    http, grpc, metrics = free_ports(3)
    for name, port in (("HTTP_PORT", http), ("GRPC_PORT", grpc), ("METRICS_PORT", metrics)):
        monkeypatch.setenv(f"PYTRITON_TRITON_CONFIG_{name}", str(port))
    pairing = {"triton_release": triton_install.install.release.tritonserver,
               "server_python": triton_install.venv.python_version}  # fmt: skip
    monkeypatch.setattr(Triton.__init__, "__kwdefaults__", {**(Triton.__init__.__kwdefaults__ or {}), **pairing})
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    yield SimpleNamespace(namespace=namespace, endpoints=SimpleNamespace(http_url=f"127.0.0.1:{http}",
                                                                         grpc_url=f"127.0.0.1:{grpc}"))  # fmt: skip
    triton = namespace.get("triton")
    if triton is not None:
        triton.stop()  # a failed assertion leaves nothing running


def _served(triton: Triton) -> tuple[int, Path]:
    launched = triton._served
    assert launched is not None and launched.serving is not None and launched.serving.server is not None
    return launched.serving.server.pid, launched.directory


A, B = np.array([[1.0], [4.0]], np.float32), np.array([[0.5], [1.0]], np.float32)  # the client cells' batch of 2


def _answers(endpoints: SimpleNamespace) -> list[dict[str, np.ndarray]]:
    """Each protocol's answer to the client cells' batch (unnamed inputs take PyTriton's names)."""
    return [infer(protocol, endpoints, "AddSub", {"INPUT_1": A, "INPUT_2": B}) for protocol in PROTOCOLS]


def test_the_notebook_serves_stops_and_serves_its_redefined_callable(notebook):
    run_cells([*SETUP, BIND, RUN], notebook.namespace)
    triton = notebook.namespace["triton"]
    first = _served(triton)
    for answer in _answers(notebook.endpoints):
        np.testing.assert_array_equal(answer["add"], A + B)
        np.testing.assert_array_equal(answer["sub"], A - B)

    run_cells([STOP, REDEFINE, BIND, RUN], notebook.namespace, first=6)
    second = _served(triton)
    assert not pid_alive(first[0]) and not first[1].exists()  # the first server and its directory are gone
    for answer in _answers(notebook.endpoints):
        np.testing.assert_array_equal(answer["add"], (A + B) * 2)
        np.testing.assert_array_equal(answer["sub"], (A - B) * 3)

    run_cells([STOP], notebook.namespace, first=10)
    assert not triton.is_alive()
    assert not pid_alive(second[0]) and not group_pids(second[0]) and not second[1].exists()
