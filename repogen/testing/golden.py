"""Golden-file assertions for users' CI: "the repository I build today is the one I reviewed".

    from repogen.testing.golden import assert_repository_matches

    def test_repository_is_unchanged(tmp_path):
        subprocess.run(["repogen", "build", "app.py:models", "-o", tmp_path / "repo"], check=True)
        assert_repository_matches("tests/golden/repo", tmp_path / "repo")

A comparison never writes: when the change is intended, update the golden with an explicit
command, ``repogen diff EXPECTED ACTUAL --update`` or a script of yours that calls
:func:`update_golden` (this repository's is ``make golden``), then review and commit the result.
Were an environment variable or an argument of the assertion to turn it into a write, a
forgotten variable would pass every comparison, a deliberately broken build included. Plain
``AssertionError`` (no pytest import), so it works under any test runner.

By default the files are compared byte for byte, as ``repogen diff`` does. With ``parsed=True``
(:func:`parsed_diff`) they are compared for what they mean, so that a golden built by one Python
also checks a build by another:

* ``config.pbtxt`` is parsed into Triton's ``ModelConfig`` message and JSON files are parsed; a
  difference is reported field by field (``input[1].data_type: TYPE_INT64 -> TYPE_INT32``);
* the versions a build records (``build``: Python, numpy, cloudpickle, in ``model.json`` and
  the manifest) are not compared; nor are the manifest's hashes of files compared directly;
* the SBOM is compared parsed, like any JSON; its payload hashes and serial number only between builds of
  the same environment, as the payloads themselves;
* a pickled payload is compared byte for byte, and a difference shows a diff of its disassembly
  (:func:`~repogen.ondisk.diff.pickle_listing`). Between builds of different environments a
  payload that differs still fails the comparison, saying so: the same source pickles
  differently under another Python or numpy (cloudpickle records ``__type_params__`` from Python
  3.12 on and ``__firstlineno__``/``__static_attributes__`` of classes from 3.13 on; numpy 2.2
  makes it list ``numpy.linalg.linalg`` among the submodules a function imports), so such a
  difference cannot be told from a real change, and accepting it would turn the comparison off
  whenever the environment moves. Build in the golden's environment (pin it), or ``exclude`` the
  payloads (``*.pkl``) and check them against a record of that environment's own. Their hashes in
  ``model.json`` and the SBOM are compared only between builds of the same environment;
* everything else (``model.py``, shipped sources, labels, shipped files) byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..ondisk.describe import plain
from ..ondisk.diff import (
    PICKLE_SUFFIXES,
    FileChange,
    RepositoryDiff,
    diff_repositories,
    excluded,
    update_expected,
)
from ..ondisk.reader import files, parse_config
from ..runtime.contract import CONFIG_FILE, MANIFEST_FILE, METADATA_FILE, SBOM_FILE

#: Per-file cap on diff lines in the assertion message: the summary names every file anyway.
MAX_DIFF_LINES = 60

#: What a build records about the environment that ran it: never compared by ``parsed=True``.
BUILD_RECORD = "build"

#: Whether a key path of a JSON file (its dict keys, list indices left out) is left out of the comparison.
Ignore = Callable[[tuple[str, ...]], bool]


def assert_repository_matches(
    expected_dir: str | os.PathLike[str],
    actual_dir: str | os.PathLike[str],
    *,
    hint: str | None = None,
    exclude: Sequence[str] = (),
    parsed: bool = False,
) -> None:
    """Raise ``AssertionError`` with the diff when ``actual_dir`` differs from ``expected_dir``.

    ``hint`` replaces the default advice at the end of the message (e.g. "run `make golden`").
    ``exclude`` takes paths out of the comparison (globs, as ``repogen diff --exclude``). ``parsed``
    compares what files mean rather than their bytes (see the module). Never writes anything.
    """
    expected, actual = Path(expected_dir), Path(actual_dir)
    if not expected.is_dir():
        raise AssertionError(
            f"golden repository {expected} does not exist; "
            + (hint or f"create it with `repogen diff {expected} {actual} --update` and commit it")
        )
    result = (
        parsed_diff(expected, actual, exclude=exclude)
        if parsed
        else diff_repositories(expected, actual, exclude=exclude)
    )
    if result.clean:
        return
    advice = hint or (
        f"if the new output is intended, update the golden with `repogen diff {expected} {actual} --update` "
        "and commit the result"
    )
    raise AssertionError(f"{result.render(max_lines_per_file=MAX_DIFF_LINES)}{advice}")


def update_golden(
    expected_dir: str | os.PathLike[str], actual_dir: str | os.PathLike[str], *, exclude: Sequence[str] = ()
) -> None:
    """Make ``expected_dir`` the golden of ``actual_dir``: the explicit write, never done by a comparison.

    What ``repogen diff --update`` does (:func:`~repogen.ondisk.diff.update_expected`): the new tree is
    swapped in whole at the end; paths matching ``exclude`` keep their golden version (or stay absent).
    """
    update_expected(Path(expected_dir), Path(actual_dir), exclude=exclude)


# -- comparing what files mean --------------------------------------------------------------------


def _build_record(repository: Path) -> Any:
    """What the manifest records about the environment that built the repository (None if unreadable)."""
    try:
        return json.loads((repository / MANIFEST_FILE).read_text(encoding="utf-8")).get(BUILD_RECORD)
    except (OSError, ValueError, AttributeError):
        return None


def parsed_diff(expected: str | Path, actual: str | Path, *, exclude: Sequence[str] = ()) -> RepositoryDiff:
    """:func:`~repogen.ondisk.diff.diff_repositories`, keeping only the changes in what files mean.

    Changed configs and JSON files are re-compared parsed (their diff becomes a field-by-field
    list); payloads are compared only between builds of the same environment. See the module.
    """
    result = diff_repositories(expected, actual, exclude=exclude)
    expected, actual = result.expected, result.actual
    record = _build_record(expected)
    same_builder = record is not None and record == _build_record(actual)
    compared = {p for p in files(expected).keys() & files(actual).keys() if not excluded(p, exclude)}
    changes = []
    for change in result.changes:
        if change.kind != "changed" or change.recorded:
            changes.append(change)
            continue
        old, new = expected / change.path, actual / change.path
        kept: FileChange | None
        if change.path.endswith(PICKLE_SUFFIXES):
            kept = change if same_builder else _incomparable(change, record, _build_record(actual))
        elif change.path == CONFIG_FILE or change.path.endswith(f"/{CONFIG_FILE}"):
            kept = _config_change(change, old, new)
        elif change.path.endswith(".json"):
            kept = _json_change(change, old, new, _ignored(change.path, compared, exclude, same_builder))
        else:
            kept = change
        if kept is not None:
            changes.append(kept)
    return RepositoryDiff(expected, actual, tuple(changes))


def _incomparable(change: FileChange, expected: Any, actual: Any) -> FileChange:
    """A payload that differs between builds of different environments: a failure that says why it is one."""
    why = (
        f"{change.path}: payload differs, and the two builds ran in different environments (expected: "
        f"{_value(expected)}, actual: {_value(actual)}), so whether its source changed cannot be told. Build in "
        "the golden's environment (pin Python, numpy and cloudpickle as it records them), or leave payloads out "
        "(exclude '*.pkl') and compare them with a golden of this environment"
    )
    return dataclasses.replace(change, diff=f"{why}\n{change.diff}" if change.diff else why)


def _ignored(path: str, compared: set[str], exclude: Sequence[str], same_builder: bool) -> Ignore:
    """Which keys of a JSON file record the build environment, or repeat what is compared elsewhere."""

    metadata = len(path.split("/")) == 3 and path.endswith(f"/{METADATA_FILE}")  # <model>/<version>/model.json

    def ignored(keys: tuple[str, ...]) -> bool:
        if keys == (BUILD_RECORD,) and (metadata or path == MANIFEST_FILE):
            return True
        if path == MANIFEST_FILE and len(keys) == 2 and keys[0] == "files":
            # Files on both sides are compared themselves (parsed where they can be); excluded ones not at all.
            return keys[1] in compared or excluded(keys[1], exclude)
        # Payloads of different build environments are not compared, nor are their hashes (the SBOM's, and the
        # serial number it derives from its content, included).
        if path == SBOM_FILE and not same_builder:
            return keys in (("serialNumber",), ("components", "hashes"))
        return metadata and not same_builder and keys == ("payload", "sha256")

    return ignored


def _config_change(change: FileChange, old: Path, new: Path) -> FileChange | None:
    (before, _), (after, _) = parse_config(old), parse_config(new)
    if before is None or after is None:
        return change  # a side does not parse: the text diff says why
    if before == after:
        return None
    lines = tree_diff(plain(before), plain(after))
    return FileChange(change.path, "changed", diff="\n".join([f"{change.path} (parsed as ModelConfig):", *lines]))


def _json_change(change: FileChange, old: Path, new: Path, ignore: Ignore) -> FileChange | None:
    try:
        before, after = json.loads(old.read_text(encoding="utf-8")), json.loads(new.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        return change
    lines = tree_diff(before, after, ignore=ignore)
    if not lines:
        return None
    return FileChange(change.path, "changed", diff="\n".join([f"{change.path} (parsed as JSON):", *lines]))


def tree_diff(old: Any, new: Any, path: tuple[Any, ...] = (), ignore: Ignore | None = None) -> list[str]:
    """What differs between two trees of dicts, lists and values, one line per difference.

    ``  a.b[2].c: 1 -> 2`` for a changed value, ``- a.d: ...`` / ``+ a.e: ...`` for one on one side
    only. Key paths for which ``ignore`` is true (tuples of dict keys; list indices left out) are
    skipped.
    """
    if ignore is not None and ignore(tuple(k for k in path if isinstance(k, str))):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in sorted(old.keys() | new.keys(), key=str):
            step = (*path, key)
            if ignore is not None and ignore(tuple(k for k in step if isinstance(k, str))):
                continue
            if key not in new:
                lines.append(f"- {_where(step)}: {_value(old[key])}")
            elif key not in old:
                lines.append(f"+ {_where(step)}: {_value(new[key])}")
            else:
                lines.extend(tree_diff(old[key], new[key], step, ignore))
        return lines
    if isinstance(old, list) and isinstance(new, list):
        lines = []
        for index in range(max(len(old), len(new))):
            step = (*path, index)
            if index >= len(new):
                lines.append(f"- {_where(step)}: {_value(old[index])}")
            elif index >= len(old):
                lines.append(f"+ {_where(step)}: {_value(new[index])}")
            else:
                lines.extend(tree_diff(old[index], new[index], step, ignore))
        return lines
    if old == new and type(old) is type(new):
        return []
    return [f"  {_where(path) or '(the whole file)'}: {_value(old)} -> {_value(new)}"]


def _where(path: tuple[Any, ...]) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
