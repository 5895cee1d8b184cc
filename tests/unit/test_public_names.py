"""Each public name is written where it is imported and checked to be listed everywhere else: the
lazy runtime's ``_HOMES`` table (its ``__all__`` is made from it) and its TYPE_CHECKING imports name the same set, and
``repogen``'s ``__all__`` is exactly what its imports and lazy build names bind. A name added to one
list and forgotten in another fails here, not in a user's ``from repogen import ...``."""

from __future__ import annotations

import ast
from pathlib import Path

import repogen
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


def test_the_runtime_lists_one_set_of_names_twice():
    tree = _tree(ROOT / "runtime" / "__init__.py")
    checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    homes = _literal(tree, "_HOMES")
    assert isinstance(homes, dict)
    assert _imported(checking.body) == set(homes) == set(repogen.runtime.__all__)
    for name in homes:  # each resolves through its home (an AttributeError names a wrong one)
        assert getattr(repogen.runtime, name).__module__.startswith("repogen.runtime."), name


def test_repogen_all_is_what_it_binds():
    tree = _tree(ROOT / "__init__.py")
    imported = _imported(tree.body) - {"Any", "set_local_runner", "set_server_runner"}
    build_names = _literal(tree, "_BUILD_NAMES")
    assert isinstance(build_names, tuple)
    assert set(repogen.__all__) == imported | set(build_names)
    assert len(repogen.__all__) == len(set(repogen.__all__))
    assert set(repogen.__all__) - {"BuildError", "RepogenError", "__version__", *build_names} <= set(
        repogen.runtime.__all__
    ) | {name for name in dir(repogen.dsl) if not name.startswith("_")}
    for name in repogen.__all__:
        assert getattr(repogen, name) is not None, name
