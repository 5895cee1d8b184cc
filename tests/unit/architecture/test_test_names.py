"""pytest imports test files by basename (no packages under tests/), so two files of one name in different folders
stop the whole run at collection ("import file mismatch"): CI failed so on three files once. Caught here, in the unit
run every pairing starts with."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def test_no_two_test_files_share_a_name():
    found = collections.defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        found[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in found.items() if len(paths) > 1}
    assert not shared, f"test files sharing a basename (rename one of each): {shared}"
