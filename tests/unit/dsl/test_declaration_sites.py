"""Every build-time error about a model begins with the ``file:line`` where the user declared it.

Each app below marks the line the error must name with ``# <- here`` (a second line, where the message
names one more, with ``# <- also``); the line numbers are read from the app, not written in the test.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.dsl.site import Site
from repogen.errors import BuildError, UnreachableContainersError
from repogen.ir.sites import declared_at

HEADER = """\
import threading

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
BATCHED = ModelConfig(max_batch_size=8)


@batch
def double(x):
    return {"y": x * 2}

"""

CASES = {
    "a bad dtype, at the decorator": (
        """
        @models.model(  # <- here
            "Scale",
            inputs=[Tensor(name="x", dtype="float33", shape=(-1,))],
            outputs=Y,
            config=BATCHED,
        )
        @batch
        def scale(x):
            return {"y": x}
        """,
        "model 'Scale', input 'x': dtype 'float33' is not supported by Triton",
    ),
    "a version bound twice, at the second binding": (
        """
        models.bind("Double", double, X, Y, config=BATCHED)  # <- also
        models.bind("Double", double, X, Y, config=BATCHED)  # <- here
        """,
        "model 'Double' is bound twice with model_version=1 (the first is at {also})",
    ),
    "an invalid model name": (
        """
        models.bind("no/slash", double, X, Y, config=BATCHED)  # <- here
        """,
        "model name 'no/slash' is not a valid Triton model name",
    ),
    "a network named like a bound model": (
        """
        models.bind("Net", double, X, Y, config=BATCHED)  # <- also
        models.tensorrt("Net", "net.plan", inputs=X, outputs=Y, config=BATCHED)  # <- here
        """,
        "model 'Net' is declared both as an exported network and with bind/@model (at {also}); names are directory "
        "names and must be unique",
    ),
    "a missing TensorRT plan": (
        """
        models.tensorrt(  # <- here
            "Plan", "missing.plan", inputs=X, outputs=Y, config=BATCHED,
        )
        """,
        "model 'Plan': the TensorRT plan ",
    ),
    "an ONNX backend that does not exist": (
        """
        models.onnx("Graph", "graph.onnx", backend="tensorflow")  # <- here
        """,
        "model 'Graph': backend='tensorflow' is not one of ['onnxruntime', 'python']",
    ),
    "an included directory with no config": (
        """
        models.include("Handmade", "nowhere")  # <- here
        """,
        "model 'Handmade' (included from ",
    ),
    "a constant passed to a step, at the body's line": (
        """
        models.bind("Double", double, X, Y, config=BATCHED)
        double_handle = models.bind("Other", double, X, Y, config=BATCHED)


        @models.ensemble("Pipeline", inputs=X, outputs=Y, config=BATCHED)
        def pipeline(x):
            return {"y": double_handle(x=2.0)["y"]}  # <- here
        """,
        "ensemble 'Pipeline': input 'x' of model 'Other' is a float; ensemble steps take only tensors of the ensemble",
    ),
    "an ensemble output no step produces, at the decorator": (
        """
        models.bind("Double", double, X, Y, config=BATCHED)


        @models.ensemble("Echo", inputs=X, outputs=Y, config=BATCHED)  # <- here
        def echo(x):
            return {"y": x}
        """,
        "ensemble 'Echo': output 'y' is never produced by a step",
    ),
    "a step of another repository, at the body's line": (
        """
        elsewhere = Repository()
        foreign = elsewhere.bind("Foreign", double, X, Y, config=BATCHED)
        models.bind("Double", double, X, Y, config=BATCHED)


        @models.ensemble("Mixed", inputs=X, outputs=Y, config=BATCHED)
        def mixed(x):
            return {"y": foreign(x=x)["y"]}  # <- here
        """,
        "ensemble 'Mixed' calls model 'Foreign', which is not in this repository",
    ),
    "a BLS call to a model of another repository": (
        """
        elsewhere = Repository()
        foreign = elsewhere.bind("Foreign", double, X, Y, config=BATCHED)


        def caller(requests):
            return [foreign(x=r["x"]) for r in requests]


        models.bind("Caller", caller, X, Y, config=BATCHED)  # <- here
        """,
        "model 'Caller' calls model 'Foreign' through BLS, but 'Foreign' is not in this repository",
    ),
    "state that cannot be pickled, found while emitting": (
        """
        LOCK = threading.Lock()
        LOCK.acquire()  # held: only a lock nobody holds is made anew in the server


        def guarded(requests):
            with LOCK:
                return requests


        models.bind("Guarded", guarded, X, Y, config=BATCHED)  # <- here
        """,
        "model 'Guarded': cannot pickle infer_func (function ",
    ),
    "a decoupled step in a fused ensemble, at the decorator": (
        """
        def ticks(requests):
            yield requests


        tick = models.bind("Tick", ticks, X, Y, config=ModelConfig(max_batch_size=8, decoupled=True))


        @models.ensemble("Fused", inputs=X, outputs=Y, config=BATCHED, fuse=True)  # <- here
        def fused(x):
            return {"y": tick(x=x)["y"]}
        """,
        "ensemble 'Fused' (fuse=True): step 'Tick' is decoupled",
    ),
    "an ensemble named like a model": (
        """
        models.bind("Twin", double, X, Y, config=BATCHED)  # <- also
        twin = models.bind("Double", double, X, Y, config=BATCHED)


        @models.ensemble("Twin", inputs=X, outputs=Y, config=BATCHED)  # <- here
        def same(x):
            return {"y": twin(x=x)["y"]}
        """,
        "model 'Twin' is declared both as an ensemble and with bind/@model (at {also})",
    ),
    "a file to ship that does not exist": (
        """
        models.bind("Shipping", double, X, Y, config=BATCHED, files=["weights.bin"])  # <- here
        """,
        "model 'Shipping': file to ship ",
    ),
    "an app that fails to import": (
        """
        models.bind("Double", double, X, Y, config=BATCHED)
        SCALE = undefined_name * 2  # <- here
        """,
        "importing the app failed: NameError: name 'undefined_name' is not defined",
    ),
}


def _write(directory: Path, body: str) -> tuple[Path, dict[str, int]]:
    source = HEADER + textwrap.dedent(body)
    app = directory / "app.py"
    app.write_text(source)
    lines = {}
    for number, line in enumerate(source.splitlines(), start=1):
        for mark in ("here", "also"):
            if line.rstrip().endswith(f"# <- {mark}"):
                lines[mark] = number
    return app, lines


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_error_names_the_declaring_line(case: str, tmp_path: Path) -> None:
    body, message = CASES[case]
    app, lines = _write(tmp_path, body)
    with pytest.raises(BuildError) as caught:
        build_app(f"{app}:models", tmp_path / "out")
    also = f"{app}:{lines['also']}" if "also" in lines else ""
    assert str(caught.value).startswith(f"{app}:{lines['here']}: {message.format(also=also)}"), str(caught.value)
    assert not (tmp_path / "out").exists()


def test_a_helper_module_failing_at_import_is_named_and_traceback_shows_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "site_helpers.py").write_text("def load():\n    return {'a': 1}['b']\n")
    (tmp_path / "app.py").write_text("from site_helpers import load\n\nWEIGHTS = load()\n")
    monkeypatch.chdir(tmp_path)  # the CLI shows paths under the working directory relative to it
    monkeypatch.setitem(sys.modules, "site_helpers", None)  # removed again after the test (the import replaces it)
    del sys.modules["site_helpers"]
    result = CliRunner().invoke(cli, ["build", "app.py:models", "-o", "out"], prog_name="repogen")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: site_helpers.py:2: importing the app app.py failed: KeyError: 'b' (`repogen build --traceback` shows "
        "the whole traceback)\n"
    )
    result = CliRunner().invoke(cli, ["build", "app.py:models", "-o", "out", "--traceback"], prog_name="repogen")
    traceback, error = result.stderr.split("\nError: ")
    assert traceback.startswith("Traceback (most recent call last):\n")
    assert 'app.py", line 3, in <module>' in traceback and 'site_helpers.py", line 2, in load' in traceback
    assert "importlib" not in traceback and traceback.endswith("KeyError: 'b'")
    assert error.startswith("site_helpers.py:2: importing the app app.py failed")


def test_a_located_error_keeps_the_fields_a_default_build_narrows_with() -> None:
    """The site goes in front of the message of a copy: an error with fields and a constructor of its own survives.

    A default build catches ``UnreachableContainersError`` from inside a model's declaration and reads its
    reason and containers to leave those containers out; rebuilt from its message alone it could not be
    made at all (the CI run that merged sites and narrowing failed there with a TypeError).
    """
    site = Site(file=os.path.abspath("app.py"), line=12)
    raised = UnreachableContainersError("model 'G' needs networkx==3.5 ...", "networkx 3.5 has no wheel", ("23.10",))
    with pytest.raises(UnreachableContainersError) as caught, declared_at(site):
        raise raised
    moved = caught.value
    assert moved is not raised and str(moved) == "app.py:12: model 'G' needs networkx==3.5 ..."
    assert (moved.reason, moved.containers, moved.site) == ("networkx 3.5 has no wheel", ("23.10",), site)
    assert raised.site is None and str(raised) == "model 'G' needs networkx==3.5 ..."


def test_a_notebook_cells_line_is_named_as_ipython_names_it() -> None:
    """Models bound in Jupyter cells (compiled under IPython's ``<ipython-input-N-...>``): the error names
    ``Cell In[N], line L`` for each of the two bindings, as IPython's own tracebacks do."""
    from repogen.ir.lower import lower
    from repogen.testing.notebook import run_cells

    bind = 'models.bind(model_name="Double", infer_func=double, inputs=X, outputs=Y, config=BATCHED)\n'
    namespace: dict = {"__name__": "__main__"}
    run_cells([HEADER, "\n" + bind, "# redefined\n\n" + bind], namespace)
    with pytest.raises(BuildError) as failed:
        lower(namespace["models"])
    assert str(failed.value).startswith(
        "Cell In[3], line 3: model 'Double' is bound twice with model_version=1 (the first is at Cell In[2], line 2)"
    )
    assert str(Site("/work/app.py", 4)).endswith("app.py:4") and not Site("/work/app.py", 4).in_cell
