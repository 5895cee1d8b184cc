"""``make golden``: rebuild every golden repository under tests/golden (README.md there says what they are).

    python tests/golden/regenerate.py            # every family
    python tests/golden/regenerate.py bls tensors

Each family directory holds an ``app.py`` and ``expected/``, the repository it builds less the
vendored code (``<model>/<version>/repogen/`` and ``cloudpickle/``). Each model carries the part of
that code it reaches (``repogen/emit/vendoring.py``; its manifest in ``expected/`` lists which files),
each file the same in every model, so each is recorded once, by sha256, in ``_vendored.json``.
``tests/unit/golden/test_golden.py`` imports this module, so the test and ``make golden`` build the same way; only
``make golden`` writes a golden (:func:`repogen.testing.golden.update_golden`), the test only compares.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from repogen.hashing import sha256_file
from repogen.ondisk.diff import PICKLE_SUFFIXES
from repogen.ondisk.reader import files
from repogen.testing.builders import ensure_builder_venv
from repogen.testing.golden import update_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
VENDORED_RECORD = GOLDEN / "_vendored.json"
#: Vendored into model versions: each file compared once, through VENDORED_RECORD, not in every golden.
VENDORED_PATTERNS = ("*/*/cloudpickle", "*/*/repogen")
VENDORED_DIRS = ("cloudpickle", "repogen")
#: The payloads built by the other builder Pythons (``expected/`` holds the dev venv's): per Python, the build
#: environment (Python, numpy, cloudpickle, as constraints.txt pins them) and each family's payload hashes.
PAYLOAD_RECORD = GOLDEN / "_payloads.json"
PAYLOAD_PYTHONS = ("3.10", "3.13")
#: Payloads: compared by hash against the golden of the environment that built them, never across environments.
PAYLOAD_PATTERNS = tuple(f"*{suffix}" for suffix in PICKLE_SUFFIXES)
#: Families whose app lives elsewhere: the quickstart golden is the README's example itself.
APPS = {"quickstart": ROOT / "examples" / "quickstart" / "app.py"}
#: Families whose app builds itself through the library API (``python app.py OUTPUT``), as a notebook would.
LIBRARY_API = frozenset({"notebook"})
#: One app built for several releases (``--triton-release``): family -> release; the app is
#: tests/golden/targets/app.py and each build is tests/golden/targets/expected-<release>/.
TARGETED = {f"targets-{release}": release for release in ("23.10", "24.11", "26.11")}


def families() -> list[str]:
    """Every family: a directory of tests/golden with an ``app.py``, and those in APPS and TARGETED."""
    found = {path.parent.name for path in GOLDEN.glob("*/app.py")} - {"targets"}
    return sorted(found | APPS.keys() | TARGETED.keys())


def app(family: str) -> Path:
    if family in TARGETED:
        return GOLDEN / "targets" / "app.py"
    return APPS.get(family, GOLDEN / family / "app.py")


def expected(family: str) -> Path:
    if family in TARGETED:
        return GOLDEN / "targets" / f"expected-{TARGETED[family]}"
    return GOLDEN / family / "expected"


def build_command(family: str, output: Path, python: str = sys.executable) -> list[str]:
    """``repogen build APP:models -o OUTPUT``, or ``python app.py OUTPUT`` for a library-API family."""
    if family in LIBRARY_API:
        return [python, str(app(family)), str(output)]
    target = ["--triton-release", TARGETED[family]] if family in TARGETED else []
    return [python, "-m", "repogen", "build", f"{app(family).relative_to(ROOT)}:models", "-o", str(output), *target]


def build(family: str, output: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """Build one family into ``output`` (which must not exist) in a fresh process, from the repository root."""
    return subprocess.run(build_command(family, output, python), cwd=ROOT, capture_output=True, text=True, check=False)


def build_all(
    names: Iterable[str], into: Path, python: str = sys.executable
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Build families concurrently (one process each) into ``into/<family>``; each one's process result."""
    names = list(names)
    workers = max(1, min(len(names), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        runs = {name: pool.submit(build, name, into / name, python) for name in names}
        return {name: run.result() for name, run in runs.items()}


def vendored_hashes(repository: Path) -> dict[str, dict[str, str]]:
    """For each model version directory, the sha256 of each vendored file (paths relative to that directory)."""
    found: dict[str, dict[str, str]] = {}
    manifest = json.loads((repository / "repogen.manifest.json").read_text(encoding="utf-8"))
    for path, digest in sorted(manifest["files"].items()):
        if path.count("/") < 3:  # a model's own files, or the SBOM at the root
            continue
        model, version, *rest = path.split("/")
        if rest[0] in VENDORED_DIRS:
            found.setdefault(f"{model}/{version}", {})["/".join(rest)] = digest
    return found


def build_record(repository: Path) -> dict[str, str]:
    """What the manifest records of the environment that built ``repository`` (Python, numpy, cloudpickle)."""
    record: dict[str, str] = json.loads((repository / "repogen.manifest.json").read_text(encoding="utf-8"))["build"]
    return record


def payload_hashes(repository: Path) -> dict[str, str]:
    """The sha256 of each pickled payload of ``repository`` (vendored code left out), by relative path."""
    return {
        path: sha256_file(source)
        for path, source in sorted(files(repository).items())
        if path.endswith(PICKLE_SUFFIXES) and not set(path.split("/")[2:3]) & set(VENDORED_DIRS)
    }


def golden_payloads(family: str, python: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """The environment and payload hashes of ``family`` built by Python ``python``: ``expected/``'s own when that
    Python made it, else PAYLOAD_RECORD's; None where no golden of that Python exists."""
    golden = expected(family)
    record = build_record(golden)
    if record["python"] == python:
        return record, payload_hashes(golden)
    recorded = _payload_record().get(python)
    if recorded is None or family not in recorded["families"]:
        return None
    return recorded["build"], recorded["families"][family]


def _payload_record() -> dict[str, Any]:
    if not PAYLOAD_RECORD.is_file():
        return {}
    recorded: dict[str, Any] = json.loads(PAYLOAD_RECORD.read_text(encoding="utf-8"))
    return recorded


def record_payloads(names: list[str], scratch: Path) -> int:
    """Build ``names`` with each PAYLOAD_PYTHONS builder venv and write their payload hashes to PAYLOAD_RECORD."""
    record = _payload_record()
    for python in PAYLOAD_PYTHONS:
        interpreter = ensure_builder_venv(python) / "bin" / "python"
        into = scratch / f"python{python}"
        results = build_all(names, into, str(interpreter))
        failed = [name for name, result in results.items() if result.returncode != 0]
        for name in failed:
            print(f"== {name} (Python {python}) failed\n{results[name].stderr}", file=sys.stderr)
        if failed:
            return 1
        builds = {json.dumps(build_record(into / name), sort_keys=True) for name in names}
        if len(builds) != 1:
            print(f"Python {python}'s builds recorded different environments: {builds}", file=sys.stderr)
            return 1
        entry = record.setdefault(python, {"build": {}, "families": {}})
        if entry["build"] != build_record(into / names[0]):  # another environment: every family again
            entry.update(build=build_record(into / names[0]), families={})
        entry["families"].update({name: payload_hashes(into / name) for name in names})
        print(f"{PAYLOAD_RECORD.relative_to(ROOT)}: payloads of {len(names)} families built by {entry['build']}")
    PAYLOAD_RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def strip_vendored(repository: Path) -> None:
    for directory in VENDORED_DIRS:
        for vendored in repository.glob(f"*/*/{directory}"):
            shutil.rmtree(vendored)


def main(argv: list[str]) -> int:
    names = argv or families()
    unknown = sorted(set(names) - set(families()))
    if unknown:
        print(f"no golden family {', '.join(unknown)}; families: {', '.join(families())}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="repogen-golden-") as scratch:
        results = build_all(names, Path(scratch))
        failed = [name for name, result in results.items() if result.returncode != 0]
        for name in failed:
            print(f"== {name}: {' '.join(results[name].args)} failed\n{results[name].stderr}", file=sys.stderr)
        if failed:
            return 1
        vendored: dict[str, str] = {}
        for name in names:
            for where, hashes in vendored_hashes(Path(scratch) / name).items():
                other = sorted(path for path, digest in hashes.items() if vendored.get(path, digest) != digest)
                if other:
                    print(f"{name}: {where} vendors other {other} than the models before it", file=sys.stderr)
                    return 1
                vendored.update(hashes)
            strip_vendored(Path(scratch) / name)
            update_golden(expected(name), Path(scratch) / name)
            print(f"{expected(name).relative_to(ROOT)}: {results[name].stdout.strip() or 'built'}")
        if record_payloads(names, Path(scratch)) != 0:
            return 1
    if vendored and set(names) == set(families()):  # every file some model of some family vendors
        VENDORED_RECORD.write_text(json.dumps({"files": vendored}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{VENDORED_RECORD.relative_to(ROOT)}: {len(vendored)} vendored files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
