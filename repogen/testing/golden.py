"""Golden-file assertions for users' CI: "the repository I build today is the one I reviewed".

    from repogen.testing.golden import assert_repository_matches

    def test_repository_is_unchanged(tmp_path):
        subprocess.run(["repogen", "build", "app.py:models", "-o", tmp_path / "repo"], check=True)
        assert_repository_matches("tests/golden/repo", tmp_path / "repo")

When the change is intended, rerun with ``REPOGEN_UPDATE_GOLDEN=1`` (or ``update=True``): the
expected directory is rewritten from the actual one and the assertion passes; review and commit
the result. Plain ``AssertionError`` (no pytest import), so it works under any test runner.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..built.diff import diff_repositories, update_expected

UPDATE_ENV = "REPOGEN_UPDATE_GOLDEN"

#: Per-file cap on unified-diff lines in the assertion message: the summary names every file anyway.
MAX_DIFF_LINES = 60


def _update_requested(update: bool) -> bool:
    return update or os.environ.get(UPDATE_ENV, "").strip().lower() in ("1", "true", "yes")


def assert_repository_matches(
    expected_dir: str | os.PathLike[str],
    actual_dir: str | os.PathLike[str],
    update: bool = False,
    *,
    hint: str | None = None,
) -> None:
    """Raise ``AssertionError`` with the diff when ``actual_dir`` differs from ``expected_dir``.

    ``hint`` replaces the default advice at the end of the message (e.g. "run `make golden`").
    """
    expected, actual = Path(expected_dir), Path(actual_dir)
    if _update_requested(update):
        update_expected(expected, actual)
        return
    if not expected.is_dir():
        raise AssertionError(
            f"golden repository {expected} does not exist; "
            + (hint or f"create it with {UPDATE_ENV}=1 (or `repogen diff {expected} {actual} --update`)")
        )
    result = diff_repositories(expected, actual)
    if result.clean:
        return
    advice = hint or (
        f"if the new output is intended, rerun with {UPDATE_ENV}=1 "
        f"(or `repogen diff {expected} {actual} --update`) and commit the result"
    )
    raise AssertionError(f"{result.render(max_lines_per_file=MAX_DIFF_LINES)}{advice}")
