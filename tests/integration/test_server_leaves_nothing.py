"""A server started without a log path (``make demo``, library users) keeps its log in a temp folder
of its own: removed when the ``with`` block ends cleanly (the text stays readable), kept when the
server failed, since the error names it."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from repogen.errors import TritonServerError
from repogen.testing.client import infer

pytestmark = pytest.mark.integration


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def test_a_clean_stop_leaves_no_log_folder(triton_install, cli_build, tmp_path, temp_dir):
    repo = tmp_path / "repo"
    cli_build("examples/quickstart/app.py:models", repo)
    with triton_install.server(repo) as server:
        assert server.log_path.parent.parent == temp_dir
        a = np.ones((1, 2), dtype=np.float32)
        assert infer("http", server, "AddSub", {"a": a, "b": a})["add"].tolist() == [[2.0, 2.0]]
    assert list(temp_dir.iterdir()) == []
    assert "successfully loaded 'AddSub'" in server.log_text()


def test_a_failed_start_keeps_the_log_it_names(triton_install, tmp_path, temp_dir):
    repo = tmp_path / "repo"
    (repo / "Broken" / "1").mkdir(parents=True)
    (repo / "Broken" / "config.pbtxt").write_text('backend: "python"\nmax_batch_size: -3\n')
    with pytest.raises(TritonServerError) as caught, triton_install.server(repo):
        pass
    kept = list(temp_dir.iterdir())
    assert len(kept) == 1 and f"log: {kept[0] / 'tritonserver.log'}" in str(caught.value)
    assert (kept[0] / "tritonserver.log").read_text()
