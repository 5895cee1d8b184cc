"""Which embedded pairing `repogen serve` picks for a repository, from what its build recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogen.errors import ServeError
from repogen.server.running.pairing import pairing_for
from repogen.triton.releases import DEFAULT_RELEASE, NEWEST, get_release


def _repository(tmp_path: Path, **manifest: object) -> Path:
    (tmp_path / "repogen.manifest.json").write_text(json.dumps({"format": 1, "portable": True, **manifest}))
    return tmp_path


def test_a_repository_the_default_pairing_serves_changes_nothing(tmp_path: Path) -> None:
    assert pairing_for(_repository(tmp_path, pythons=["3.10", "3.12"])) is None
    assert pairing_for(tmp_path / "hand-written") is None  # nothing recorded: nothing to choose by


def test_a_repository_shipping_for_python_3_12_only_runs_on_its_python(tmp_path: Path) -> None:
    pick = pairing_for(_repository(tmp_path, pythons=["3.12"]))
    assert pick is not None and (pick.release, pick.python) == (DEFAULT_RELEASE, "3.12")
    assert pick.why == f"{tmp_path} ships for NGC 24.11+ (Python 3.12) only"


def test_a_repository_built_for_one_release_runs_on_it_or_on_its_python(tmp_path: Path) -> None:
    old = pairing_for(_repository(tmp_path, pythons=["3.10"], target=get_release("23.10").record()))
    assert old is not None and (old.release, old.python) == (get_release("23.10"), "3.10")
    new = pairing_for(_repository(tmp_path, pythons=["3.12"], target=NEWEST.record()))
    assert new is not None and (new.release, new.python) == (DEFAULT_RELEASE, "3.12")
    assert new.why.endswith("which no PyPI wheel ships; tritonserver 2.51.0 + Python 3.12 (stands in for NGC "
                            "24.11+) runs the same Python")  # fmt: skip


def test_a_pinned_build_runs_on_the_python_that_wrote_it_or_is_refused_naming_it(tmp_path: Path) -> None:
    pick = pairing_for(_repository(tmp_path, portable=False, build={"python": "3.11"}))
    assert pick is not None and (pick.release, pick.python) == (DEFAULT_RELEASE, "3.11")
    with pytest.raises(ServeError) as refused:
        pairing_for(_repository(tmp_path, portable=False, build={"python": "3.14"}))
    message = str(refused.value)
    assert "was built with --pin-python on Python 3.14, but no embedded tritonserver" in message
    assert (
        "has a Python backend stub for Python 3.14. Serve it in a container whose tritonserver runs Python" in message
    )
