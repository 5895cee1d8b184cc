"""docs/architecture.md's recipes (a deploy target, a decorator, a Triton release, ...) name the rooms, files and
golden pairs a change of their kind touches: each path they name must exist, or the recipe has gone stale."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "architecture.md"
HEADING = "## Recipes"
KINDS = ("### A new deploy target", "### A new decorator", "### A new Triton release")
_CODE = re.compile(r"`([^`\s]+)`")
_LINK = re.compile(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)")
_PATHLIKE = re.compile(r"^[\w./-]+$")


def recipes(text: str) -> str:
    """The recipes section of ``text``: from its heading to the next heading of the same level."""
    start = text.index(f"\n{HEADING}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def named_paths(section: str) -> list[str]:
    """Every path the section names: code spans holding a ``/`` (a placeholder such as ``<family>`` aside; a
    path inside the package may leave out ``repogen/``), and the documentation pages it links to."""
    paths = [p for p in _CODE.findall(section) if "/" in p and not p.startswith("/") and _PATHLIKE.match(p)]
    return sorted({*paths, *(f"docs/{page}" for page in _LINK.findall(section))})


def missing(paths: list[str]) -> list[str]:
    """Those of ``paths`` found neither from the repository's root nor inside the package."""
    return [p for p in paths if not (ROOT / p).exists() and not (ROOT / "repogen" / p).exists()]


def test_every_path_a_recipe_names_exists() -> None:
    section = recipes(DOC.read_text(encoding="utf-8"))
    paths = named_paths(section)
    assert len(paths) > 30, paths  # the parse still finds the recipes' paths
    assert missing(paths) == [], f"docs/architecture.md's recipes name paths that do not exist: {missing(paths)}"


def test_each_recipe_says_which_rooms_change_and_which_golden_pair_shows_it() -> None:
    section = recipes(DOC.read_text(encoding="utf-8"))
    for kind in KINDS:
        assert kind in section, kind
        recipe = section.split(kind, 1)[1].split("\n### ", 1)[0]
        assert "**Rooms**" in recipe and "**Golden pair**" in recipe, kind
        assert any(p.startswith("tests/golden/") for p in named_paths(recipe)), kind


def test_a_recipe_naming_a_file_that_is_gone_is_caught() -> None:
    stale = (
        "\n## Recipes: where each kind of change belongs\n\n### A new decorator\n\n**Rooms**: `repogen/runtime/` "
        "(`runtime/decorators.py`, `runtime/renamed_away.py`), see [Writing models](models.md) and [Gone](gone.md)."
        " **Golden pair**: `tests/golden/<family>/app.py`, `tests/golden/tensors/expected/`.\n\n## Next\n\n`x/y.py`"
    )
    paths = named_paths(recipes(stale))
    assert paths == [
        "docs/gone.md", "docs/models.md", "repogen/runtime/", "runtime/decorators.py", "runtime/renamed_away.py",
        "tests/golden/tensors/expected/",
    ]  # fmt: skip
    assert missing(paths) == ["docs/gone.md", "runtime/renamed_away.py"]
