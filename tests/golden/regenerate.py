"""``make golden``: rebuild every golden repository under tests/golden (README.md there says what they are).

    python tests/golden/regenerate.py            # every family
    python tests/golden/regenerate.py bls tensors

Each family directory holds an ``app.py`` and ``expected/``, the repository it builds less the
vendored code (``<model>/<version>/repogen/`` and ``cloudpickle/``). That code is the same in
every model, so it is recorded once, by sha256, in ``_vendored.json``. ``tests/unit/test_golden.py``
imports this module, so the test and ``make golden`` build the same way; only ``make golden``
writes a golden (:func:`repogen.testing.golden.update_golden`), the test only compares.
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

from repogen.testing.golden import update_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
VENDORED_RECORD = GOLDEN / "_vendored.json"
#: Vendored into every model version: compared once, through VENDORED_RECORD, not in every golden.
VENDORED_PATTERNS = ("*/*/cloudpickle", "*/*/repogen")
VENDORED_DIRS = ("cloudpickle", "repogen")
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
                if vendored and hashes != vendored:
                    print(f"{name}: {where} vendors other files than the models before it", file=sys.stderr)
                    return 1
                vendored = hashes
            strip_vendored(Path(scratch) / name)
            update_golden(expected(name), Path(scratch) / name)
            print(f"{expected(name).relative_to(ROOT)}: {results[name].stdout.strip() or 'built'}")
    if vendored:  # every family's models vendor the same files: any of them gives the record
        VENDORED_RECORD.write_text(json.dumps({"files": vendored}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{VENDORED_RECORD.relative_to(ROOT)}: {len(vendored)} vendored files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
