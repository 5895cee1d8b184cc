"""The ``builder`` fixture end to end: ``repogen build`` under the server's own Python, then serve and ask.

A build made by the Python that serves it is the NGC workflow the Dockerfile of ``repogen deploy``
follows (build inside the container); other builders against other servers are
tests/integration/test_portability_served.py's subject.
"""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(builder, serve, triton_install, tmp_path_factory):
    repo = tmp_path_factory.mktemp("builder") / "repo"
    result = builder(triton_install.venv.python_version, "examples/quickstart/app.py:models", repo)
    assert "Built 2 model(s)" in result.stdout
    return serve(repo)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_build_by_the_servers_python_serves(server, protocol):
    a = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    b = np.array([[0.5, 0.5, 0.5]], dtype=np.float32)
    out = infer(protocol, server, "AddSub", {"a": a, "b": b})
    np.testing.assert_array_equal(out["add"], a + b)
    np.testing.assert_array_equal(out["sub"], a - b)
    text = np.array([[b"hello triton"]], dtype=object)
    assert infer(protocol, server, "Shout", {"text": text})["loud"].tolist() == [[b"HELLO TRITON!"]]
