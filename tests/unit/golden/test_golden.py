"""Every golden family under tests/golden builds to exactly its checked-in ``expected/`` repository.

One app per feature family (tests/golden/<family>/app.py, the quickstart from examples/), built
as ``make golden`` builds it (tests/golden/regenerate.py) and compared parsed
(``assert_repository_matches(..., parsed=True)``): configs as ``ModelConfig`` messages, JSON as
JSON, sources byte for byte. The vendored code, the same in every model, is left out of the goldens
and checked once against tests/golden/_vendored.json. The versions a build records (Python, numpy,
cloudpickle) are not compared, so the goldens also hold for builds by the other Pythons a repository
may be built with (builder venvs, created on first use).

Payloads are compared on their own, by sha256, against the golden of the environment that built
them, since another Python or numpy pickles the same source differently: the dev venv's against
``expected/``, the builder venvs' against tests/golden/_payloads.json. That environment is pinned
where goldens are made and where they are checked (constraints.txt); a build whose numpy or
cloudpickle is not the golden's fails, and a build by a Python no golden was made with is a skip
that says so, one per family. Nothing here writes a golden: ``make golden`` does.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from repogen.hashing import sha256_file
from repogen.ondisk.reader import files
from repogen.testing.builders import ensure_builder_venv
from repogen.testing.carried import load_problems
from repogen.testing.golden import assert_repository_matches

ROOT = Path(__file__).resolve().parents[3]
HINT = "the build output changed: if that is intended, run `make golden` and commit tests/golden with the change"


def _regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_regenerate", ROOT / "tests" / "golden" / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regenerate = _regenerate()
FAMILIES = regenerate.families()
#: The oldest and the newest builder Python (~8 s each, once their venvs exist), whose payloads make golden records,
#: less the one running the tests, which test_family_builds_to_its_golden covers.
OTHER_PYTHONS = tuple(p for p in regenerate.PAYLOAD_PYTHONS if p != "{}.{}".format(*sys.version_info[:2]))


def _built(results: dict, into: Path) -> dict[str, Path]:
    failed = {name: result for name, result in results.items() if result.returncode != 0}
    assert not failed, "\n".join(f"{' '.join(r.args)} failed:\n{r.stderr}" for r in failed.values())
    return {name: into / name for name in results}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every family built by this Python, concurrently, once for the module."""
    into = tmp_path_factory.mktemp("golden")
    return _built(regenerate.build_all(FAMILIES, into), into)


def test_the_corpus_covers_every_feature_family() -> None:
    assert FAMILIES == [
        "bls",
        "class_files",
        "ensemble",
        "fused",
        "included",
        "instance_groups",
        "notebook",
        "onnx",
        "quickstart",
        "sequence",
        "streaming",
        "targets-23.10",
        "targets-24.11",
        "targets-26.11",
        "tensorrt",
        "tensors",
        "torchscript",
        "versions",
        "warmup_cache_rate_limit",
    ]
    for family in FAMILIES:
        assert regenerate.app(family).is_file()
        assert regenerate.expected(family).is_dir(), f"{regenerate.expected(family)} is missing: run `make golden`"
        assert not list(regenerate.expected(family).glob("*/*/cloudpickle")), "vendored code is checked once"
        assert not list(regenerate.expected(family).glob("*/*/repogen")), "vendored code is checked once"


#: Left out of the parsed comparison: vendored code (checked once) and payloads (checked by environment).
LEFT_OUT = (*regenerate.VENDORED_PATTERNS, *regenerate.PAYLOAD_PATTERNS)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_builds_to_its_golden(builds: dict[str, Path], family: str) -> None:
    assert_repository_matches(regenerate.expected(family), builds[family], exclude=LEFT_OUT, parsed=True, hint=HINT)


def _payload_problem(family: str, repository: Path, missing: str = "skip") -> str | None:
    """Why ``repository``'s payloads are not ``family``'s golden ones of the same environment (None: they are).
    Where no golden was made with the build's Python, ``missing="skip"`` skips, saying so; else that is the problem."""
    built = regenerate.build_record(repository)
    golden = regenerate.golden_payloads(family, built["python"])
    if golden is None and missing != "skip":
        return f"{family}: {regenerate.PAYLOAD_RECORD.name} has no payloads built by Python {built['python']}; {HINT}"
    if golden is None:
        made = sorted({regenerate.build_record(regenerate.expected(family))["python"], *regenerate.PAYLOAD_PYTHONS})
        pytest.skip(
            f"{family}: no golden payloads built by Python {built['python']}, so they cannot be compared: `make "
            f"golden` makes them with Python {', '.join(made)} (run the tests from a venv of one of those)"
        )
    record, hashes = golden
    if built != record:
        return (
            f"{family}: built in {built}, but its golden payloads in {record}: payloads are compared only within one "
            "environment, which constraints.txt pins (make install and the builder venvs install with it); "
            "reinstall, or if the pin was raised, run `make golden` and commit the result"
        )
    actual = regenerate.payload_hashes(repository)
    changed = sorted(path for path in actual.keys() | hashes.keys() if actual.get(path) != hashes.get(path))
    if changed:
        return f"{family} (built in {built}): payloads differ from the golden ones: {', '.join(changed)}; {HINT}"
    return None


@pytest.mark.parametrize("family", FAMILIES)
def test_family_payloads_are_the_golden_ones(builds: dict[str, Path], family: str) -> None:
    problem = _payload_problem(family, builds[family])
    if problem is not None and regenerate.build_record(regenerate.expected(family)) == regenerate.build_record(
        builds[family]
    ):  # the golden's own environment: show the payloads' disassembly diff
        assert_repository_matches(regenerate.expected(family), builds[family], exclude=regenerate.VENDORED_PATTERNS,
                                  parsed=True, hint=HINT)  # fmt: skip
    assert problem is None, problem


def _check_vendored(builds: dict[str, Path]) -> int:
    """Every file a model version vendors is the one tests/golden/_vendored.json records, and together they vendor
    every file it records (which files each vendors, its manifest in the golden says); how many versions do."""
    record = json.loads(regenerate.VENDORED_RECORD.read_text(encoding="utf-8"))["files"]
    checked = 0
    seen: set[str] = set()
    for family, repository in builds.items():
        for where, hashes in regenerate.vendored_hashes(repository).items():
            checked += 1
            seen |= hashes.keys()
            added = sorted(hashes.keys() - record.keys())
            changed = sorted(path for path in hashes.keys() & record.keys() if hashes[path] != record[path])
            assert not (added or changed), (
                f"{family}: {where} vendors other code than {regenerate.VENDORED_RECORD.name} records: "
                f"new {added}, changed {changed}; {HINT}"
            )
            for path, digest in hashes.items():  # the manifest says what the files are: check it is true
                assert sha256_file(repository / where / path) == digest, f"{family}: {where}/{path}"
    if set(builds) == set(FAMILIES):
        assert seen == record.keys(), f"no model vendors {sorted(record.keys() - seen)}; {HINT}"
    return checked


def test_vendored_code_is_the_recorded_code_in_every_model(builds: dict[str, Path]) -> None:
    assert _check_vendored(builds) >= len(FAMILIES)


def test_every_model_loads_from_the_part_of_the_runtime_it_carries(builds: dict[str, Path]) -> None:
    """Each version imported and initialized with its own vendored files alone (repogen/emit/vendoring.py)."""
    assert load_problems(*builds.values()) == {}


def test_a_golden_failure_shows_a_semantic_diff(
    builds: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a reviewer reads when a golden breaks: the field, the key, the source line, the opcode. The tampered
    build is never written as the golden, whatever the environment holds (REPOGEN_UPDATE_GOLDEN once did that)."""
    monkeypatch.setenv("REPOGEN_UPDATE_GOLDEN", "1")
    golden = {path: sha256_file(source) for path, source in files(regenerate.expected("tensors")).items()}
    actual = tmp_path / "tensors"
    shutil.copytree(builds["tensors"], actual)
    config = actual / "Offset" / "config.pbtxt"
    config.write_text(config.read_text().replace("max_batch_size: 8", "max_batch_size: 16"))
    source = actual / "Offset" / "1" / "sources" / "app.py"
    source.write_text(source.read_text().replace("x + offset", "x - offset"))
    metadata = actual / "Offset" / "1" / "model.json"
    metadata.write_text(metadata.read_text().replace('"strict": false', '"strict": true'))
    payload = actual / "Scale" / "1" / "model.pkl"
    payload.write_bytes(payload.read_bytes().replace(b"group_by_keys", b"group_by_kays"))
    with pytest.raises(AssertionError) as failure:
        assert_repository_matches(
            regenerate.expected("tensors"), actual, exclude=regenerate.VENDORED_PATTERNS, parsed=True, hint=HINT
        )
    message = str(failure.value)
    assert "Offset/config.pbtxt (parsed as ModelConfig):\n  max_batch_size: 8 -> 16\n" in message
    assert "Offset/1/model.json (parsed as JSON):\n  strict: false -> true\n" in message
    assert '-    return {"y": x + offset}\n+    return {"y": x - offset}' in message
    assert "binary file differs: Scale/1/model.pkl (model Scale's payload): sha256 " in message
    assert "-SHORT_BINUNICODE 'group_by_keys'\n+SHORT_BINUNICODE 'group_by_kays'" in message
    assert message.endswith(HINT)
    assert {path: sha256_file(source) for path, source in files(regenerate.expected("tensors")).items()} == golden


@pytest.mark.parametrize("python", OTHER_PYTHONS)
def test_goldens_hold_for_builds_by_another_python(python: str, repogen_cache_dir: Path, tmp_path: Path) -> None:
    """Everything but the payloads is the same whichever Python builds; the payloads are that Python's golden ones
    (tests/golden/_payloads.json)."""
    interpreter = ensure_builder_venv(python, repogen_cache_dir) / "bin" / "python"  # created or refreshed here
    builds = _built(regenerate.build_all(FAMILIES, tmp_path, str(interpreter)), tmp_path)
    for family, repository in builds.items():
        recorded = json.loads((repository / "repogen.manifest.json").read_text(encoding="utf-8"))["build"]
        assert recorded["python"] == python
        assert_repository_matches(
            regenerate.expected(family),
            repository,
            exclude=LEFT_OUT,
            parsed=True,
            hint=f"(built by Python {python}) {HINT}",
        )
    found = {family: _payload_problem(family, repository, missing="fail") for family, repository in builds.items()}
    problems = [problem for problem in found.values() if problem]
    assert problems == [], "\n".join(problems)
    assert _check_vendored(builds) >= len(FAMILIES)
