"""Portable payloads: code travels as source references, and what cannot travel fails the build.

These run in one Python; ``tests/integration/test_portability_served.py`` serves the same shapes on every
container Python, built by three others.
"""

from __future__ import annotations

import importlib.util
import io
import json
import linecache
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.errors import BuildError
from repogen.runtime.errors import PayloadError
from repogen.runtime.payload import load_payload
from repogen.testing.builders import BuildWithError, build_with
from repogen.testing.bytecode_scan import bytecode_in_pickle, bytecode_in_repository
from repogen.triton.releases import RELEASES, first_with_python

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
UNBATCHED = ModelConfig(batching=False)


def _repository(func, name: str = "M") -> Repository:
    models = Repository()
    models.bind(name, infer_func=func, inputs=X, outputs=Y, config=UNBATCHED)
    return models


def _load(repo: Path, name: str = "M"):
    return load_payload(str(repo / name / "1"), name)[1]["infer_funcs"][0]


def _module(tmp_path: Path, source: str, name: str = "userapp"):
    """A user module on disk, imported by file like `repogen build` does, its directory the app dir."""
    from repogen.loader import load_app

    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return load_app(f"{path}:models", tmp_path)


def _build(tmp_path: Path, source: str, **options) -> Path:
    app = _module(tmp_path, source)
    out = tmp_path / "repo"
    build_repository(app.repository, out, roots=(str(app.app_dir),), **options)
    return out


SHAPES = """
import numpy as np
from repogen import ModelConfig, Repository, Tensor

models = Repository()
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
FIRST, SECOND = (lambda v: v + 1), (lambda v: v * 10)
NESTED = lambda a: lambda b: a - b


class Base:
    def scale(self, v):
        return v * 2


class Child(Base):
    def scale(self, v):
        return super().scale(v) + 1


def make():
    child = Child()
    squares = [lambda v, k=k: v * k for k in range(3)]

    def infer(requests):
        return [{"y": NESTED(SECOND(FIRST(r["x"])))(squares[2](child.scale(r["x"])))} for r in requests]

    return infer


models.bind("M", infer_func=make(), inputs=X, outputs=X, config=ModelConfig(batching=False))
"""


def test_code_travels_as_references_into_shipped_source(tmp_path):
    repo = _build(tmp_path, SHAPES)
    meta = json.loads((repo / "M" / "1" / "model.json").read_text())
    assert meta["portable"] is True and meta["pythons"] == ["3.10", "3.12"] and meta["format"] == 2
    assert meta["sources"] == {
        "userapp.py": {"file": "sources/userapp.py", "sha256": meta["sources"]["userapp.py"]["sha256"]}
    }
    assert (repo / "M" / "1" / "sources" / "userapp.py").read_text() == (tmp_path / "userapp.py").read_text()
    assert bytecode_in_repository(repo) == {}
    x = np.array([1.0, 2.0], dtype=np.float32)
    # NESTED(SECOND(FIRST(x)))(squares[2](child.scale(x))) = 10 * (x + 1) - 2 * (2x + 1)
    assert _load(repo)([{"x": x}])[0]["y"].tolist() == [14.0, 20.0]


def test_pinned_payloads_carry_bytecode_and_say_so(tmp_path):
    repo = _build(tmp_path, SHAPES, pin_python=True)
    meta = json.loads((repo / "M" / "1" / "model.json").read_text())
    assert meta["portable"] is False and "sources" not in meta or meta["sources"] == {}
    problems = bytecode_in_pickle((repo / "M" / "1" / "model.pkl").read_bytes())
    assert any("CodeType" in p for p in problems)
    assert bytecode_in_repository(repo) == {}  # pinned payloads are bytecode by design: not reported


def test_a_payload_the_gate_cannot_read_is_reported_not_passed(tmp_path):
    repo = _build(tmp_path, SHAPES)
    payload, sidecar = repo / "M" / "1" / "model.pkl", repo / "M" / "1" / "model.json"
    built = payload.read_bytes()
    payload.write_bytes(built[: len(built) // 2])  # not a whole pickle
    assert list(bytecode_in_repository(repo)) == [str(payload)]
    assert "cannot read the payload model.json names: ValueError: " in bytecode_in_repository(repo)[str(payload)][0]
    payload.unlink()
    assert "FileNotFoundError" in bytecode_in_repository(repo)[str(payload)][0]
    payload.write_bytes(built)
    assert bytecode_in_repository(repo) == {}
    sidecar.write_text('{"name": "another tool\'s model.json"}')  # not a repogen sidecar: nothing to read
    assert bytecode_in_repository(repo) == {}


def test_a_changed_source_is_refused_at_load(tmp_path):
    repo = _build(tmp_path, SHAPES)
    source = repo / "M" / "1" / "sources" / "userapp.py"
    source.write_text(source.read_text() + "\n# edited\n")
    with pytest.raises(PayloadError, match=r"refusing to compile .*userapp.py: sha256 mismatch"):
        _load(repo)


def test_code_with_no_source_fails_the_build_unless_pinned(tmp_path):
    namespace: dict = {}
    exec("def generated(requests):\n    return requests\n", namespace)  # noqa: S102
    with pytest.raises(BuildError) as info:
        build_repository(_repository(namespace["generated"]), tmp_path / "repo")
    message = str(info.value)
    assert message.startswith(
        f"{info.value.site}: model 'M': generated has no source to ship: it was compiled from '<string>'"
    )
    assert "--pin-python" in message
    build_repository(_repository(namespace["generated"]), tmp_path / "pinned", pin_python=True)


@pytest.mark.parametrize("filename", ["<ipython-input-3-1f2e>", "/tmp/ipykernel_811/2419.py"])
def test_a_notebook_cell_ships_its_linecache_source(tmp_path, filename):
    cell = "def cell_infer(requests):\n    return [{'y': r['x'] + OFFSET} for r in requests]\nOFFSET = 5\n"
    linecache.cache[filename] = (len(cell), None, cell.splitlines(keepends=True), filename)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(cell, filename, "exec"), namespace)  # noqa: S102
        build_repository(_repository(namespace["cell_infer"]), tmp_path / "repo")
    finally:
        del linecache.cache[filename]
    shipped = list((tmp_path / "repo" / "M" / "1" / "sources" / "cells").iterdir())
    assert [p.read_text() for p in shipped] == [cell]
    assert shipped[0].name.endswith(".py") and "<" not in shipped[0].name
    assert _load(tmp_path / "repo")([{"x": np.array([1.0])}])[0]["y"].tolist() == [6.0]


def test_dataclasses_and_namedtuples_are_regenerated_by_the_loading_python(tmp_path):
    repo = _build(
        tmp_path,
        """
        import collections, dataclasses, typing
        import numpy as np
        from repogen import ModelConfig, Repository, Tensor

        @dataclasses.dataclass(frozen=True, order=True)
        class Settings:
            scale: float = 2.0
            tags: list = dataclasses.field(default_factory=list, compare=False)

        class Point(typing.NamedTuple):
            x: float
            y: float = 4.0
            def norm(self):
                return (self.x ** 2 + self.y ** 2) ** 0.5

        Pair = collections.namedtuple("Pair", "a b")
        DEFAULT = Settings()

        def infer(requests):
            s = Settings(tags=["t"])
            assert s == DEFAULT and s < Settings(3.0) and Pair(1, 2)._replace(b=3) == (1, 3)
            return [{"y": r["x"] * s.scale * Point(3.0).norm()} for r in requests]

        models = Repository()
        X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
        models.bind("M", infer_func=infer, inputs=X, outputs=X, config=ModelConfig(batching=False))
        """,
    )
    assert _load(repo)([{"x": np.array([1.0])}])[0]["y"].tolist() == [10.0]
    assert bytecode_in_repository(repo) == {}


def test_unpicklable_state_names_the_path_to_it(tmp_path):
    lock = threading.local()  # thread-local storage: no state a server could be given (a lock nobody holds travels)

    def guarded(requests):
        lock.seen = True
        return requests

    with pytest.raises(BuildError) as info:
        build_repository(_repository(guarded), tmp_path / "repo")
    message = str(info.value)
    assert message.startswith(f"{info.value.site}: model 'M': cannot pickle infer_func (function ")
    assert "-> closure variable 'lock' (a _thread._local object)" in message
    assert "TypeError: cannot pickle '_thread._local' object" in message
    assert "in the __init__ of a class bound as the model" in message
    assert not (tmp_path / "repo").exists()


def test_a_module_the_server_cannot_import_fails_the_build(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "extlib.py").write_text("def scale(x):\n    return x * 3\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    app = tmp_path / "app"
    app.mkdir()
    with pytest.raises(BuildError) as info:
        _build(app, "import extlib\nfrom repogen import Repository\nmodels = Repository()\n" + _BIND_USING_EXTLIB)
    message = str(info.value)
    assert "model 'M' needs module 'extlib' (" in message and "extlib.py) for module extlib" in message
    assert f"not under the app directory {app}" in message
    assert "pass --app-dir with a directory that contains it" in message


_BIND_USING_EXTLIB = """
import numpy as np
from repogen import ModelConfig, Tensor
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
models.bind("M", infer_func=lambda rs: [{"x": extlib.scale(r["x"])} for r in rs], inputs=X, outputs=X,
            config=ModelConfig(batching=False))
"""


def test_build_time_objects_in_a_callable_fail_the_build(tmp_path):
    spec = Tensor(name="x", dtype=np.float32, shape=(-1,))
    with pytest.raises(BuildError, match=r"model 'M' refers to repogen\.dsl\.tensor\.Tensor, which exists only at"):
        build_repository(_repository(lambda requests: [{"y": spec} for _ in requests]), tmp_path / "repo")


@pytest.mark.parametrize(
    ("statement", "needs"),
    [("try:\n    pass\nexcept* ValueError:\n    pass\n", "3.11"), ("rows = {}\nidx = (1,)\nrows[*idx] = 1\n", "3.11")],
)
def test_grammar_newer_than_a_target_python_fails_the_build(tmp_path, statement, needs):
    first_312 = first_with_python("3.12")
    runs_310 = [r.ngc for r in RELEASES if r.python == "3.10"]
    oldest = f"NGC {first_312.ngc} (tritonserver {first_312.tritonserver})"
    source = f"{statement}{_PLAIN_APP}"
    with pytest.raises(BuildError) as info:
        _build(tmp_path, source)
    message = str(info.value)
    assert f"userapp.py:3: {'an except* clause' if 'except' in statement else 'a starred expression'}" in message
    assert (
        f"this needs Python {needs}, but NGC {runs_310[0]}-{runs_310[-1]} (Python 3.10) compiles the shipped "
        in message
    )
    assert f"The oldest release that can serve it is {oldest}" in message
    _build(tmp_path / "narrowed", source, triton_release="25.01")  # a 3.12 container compiles it


_PLAIN_APP = """
import numpy as np
from repogen import ModelConfig, Repository, Tensor
models = Repository()
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
models.bind("M", infer_func=lambda rs: rs, inputs=X, outputs=X, config=ModelConfig(batching=False))
"""


@pytest.mark.parametrize(
    ("module", "why", "fine_on", "has_it"),
    [("tomllib", "added in Python 3.11", "25.01", "3.13"), ("imp", "removed in Python 3.12", "24.10", "3.10")],
)
def test_a_stdlib_module_a_target_python_lacks_fails_the_build(
    tmp_path, repogen_cache_dir, module, why, fine_on, has_it
):
    source = f"import warnings\nwarnings.simplefilter('ignore')\nimport {module}\n{_PLAIN_APP}".replace(
        "infer_func=lambda rs: rs", f"infer_func=lambda rs: [{module}.__name__ and r for r in rs]"
    )
    message = f"uses the standard-library module '{module}' ({why})"
    if importlib.util.find_spec(module) is not None:
        with pytest.raises(BuildError) as info:
            _build(tmp_path, source)
        assert message in str(info.value)
        _build(tmp_path / "narrowed", source, triton_release=fine_on)
        return
    # this Python has no such module to import: a builder venv of one that has it builds the app
    app = tmp_path / "app.py"
    app.write_text(source)
    with pytest.raises(BuildWithError) as failed:
        build_with(has_it, f"{app}:models", tmp_path / "repo", cache_dir=repogen_cache_dir)
    assert message in str(failed.value)
    build_with(has_it, f"{app}:models", tmp_path / "narrowed", "--triton-release", fine_on, cache_dir=repogen_cache_dir)


def test_function_local_imports_of_installed_packages_become_requirements(tmp_path):
    def styled(requests):
        import click

        return [{"y": r["x"] if click else None} for r in requests]

    build_repository(_repository(styled), tmp_path / "repo")
    meta = json.loads((tmp_path / "repo" / "M" / "1" / "model.json").read_text())
    assert meta["requirements"]["click"].startswith("click==")


def test_the_unpickler_refuses_unknown_persistent_ids(tmp_path):
    import pickle

    from repogen.runtime.portable import PayloadUnpickler, Sources

    class Foreign(pickle.Pickler):
        def persistent_id(self, obj):
            return ("shell", "rm -rf /") if obj == "x" else None

    buffer = io.BytesIO()
    Foreign(buffer).dump(["x"])
    sources = Sources("M", str(tmp_path), {}, "model.json")
    with pytest.raises(pickle.UnpicklingError, match="unknown persistent id"):
        PayloadUnpickler(io.BytesIO(buffer.getvalue()), sources).load()


def test_batch_decorated_quickstart_loads(tmp_path):
    @batch
    def double(x):
        return {"y": x * 2}

    build_repository(_repository(double), tmp_path / "repo")
    assert bytecode_in_repository(tmp_path / "repo") == {}
