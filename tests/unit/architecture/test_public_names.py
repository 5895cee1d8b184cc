"""Each public name is written where it is imported and checked to be listed everywhere else: each lazy package's
(``repogen``, ``repogen.dsl``, ``repogen.runtime``) ``_HOMES`` table (its ``__all__`` is made from it) and its
TYPE_CHECKING imports name the same set, and each name resolves to its home's object. A name added to one
list and forgotten in another fails here, not in a user's ``from repogen import ...``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import repogen
import repogen.dsl
import repogen.runtime

ROOT = Path(repogen.__file__).resolve().parent


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imported(nodes: list[ast.stmt]) -> set[str]:
    return {alias.asname or alias.name for node in nodes if isinstance(node, ast.ImportFrom) for alias in node.names}


def _literal(tree: ast.Module, name: str) -> object:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not assigned at the top level")


def _lazy_names(package: str, relative: Path) -> dict[str, object]:
    """A lazy package's ``_HOMES`` (name -> home), checked to be the names of its TYPE_CHECKING imports."""
    tree = _tree(ROOT / relative)
    checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    homes = _literal(tree, "_HOMES")
    assert isinstance(homes, dict)
    assert _imported(checking.body) == set(homes), package
    return homes


def test_the_runtime_lists_one_set_of_names_twice():
    homes = _lazy_names("repogen.runtime", Path("runtime", "__init__.py"))
    assert set(homes) == set(repogen.runtime.__all__)
    for name in homes:  # each resolves through its home (an AttributeError names a wrong one)
        assert getattr(repogen.runtime, name).__module__.startswith("repogen.runtime."), name


def test_the_dsl_lists_one_set_of_names_twice():
    homes = _lazy_names("repogen.dsl", Path("dsl", "__init__.py"))
    assert set(homes) == set(repogen.dsl.__all__)
    for name, home in homes.items():
        assert getattr(repogen.dsl, name).__module__ == f"repogen.dsl.{home}", name


def test_repogen_all_is_what_it_binds():
    homes = _lazy_names("repogen", Path("__init__.py"))
    assert set(repogen.__all__) == set(homes) | {"__version__"}
    assert len(repogen.__all__) == len(set(repogen.__all__))
    for name, home in homes.items():  # each re-exported from its home's own list of public names
        module = importlib.import_module(f"repogen.{home}")
        assert name in getattr(module, "__all__", ()) or home in ("build", "errors"), name
        assert getattr(repogen, name) is getattr(module, name), name


def test_declaring_models_loads_no_runner_and_the_runners_are_set_however_the_dsl_is_imported():
    """``import repogen`` registers the runners without loading the DSL; ``repogen.dsl.repository`` imported first
    (before any name of ``repogen``) still finds them."""
    probe = (
        "import sys; import repogen.dsl.repository as r; from repogen.dsl import runners; "
        "assert runners.local_runner() and runners.server_runner(); "
        "assert 'numpy' not in sys.modules or 'repogen.dsl.config' in sys.modules; "
        "assert not any(m in sys.modules for m in ('repogen.local', 'repogen.build_and_serve', 'repogen.build'))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    bare = "import sys, repogen; assert not [m for m in sys.modules if m.startswith(('numpy', 'repogen.runtime'))]"
    run = subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
