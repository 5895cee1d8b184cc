"""Builds are atomic and serialized: SIGKILL at any moment, concurrent builds, ``--model-version`` merges.

The kill trials run the real CLI on a 30-model repository (tests/apps/integrity/many.py) whose
payloads change with INTEGRITY_GENERATION, so after every kill the repository on disk must be,
byte for byte, either the previous build or the new one, never a mix. The writer's trace
(REPOGEN_WRITER_TRACE) tells which phase each kill landed in; REPOGEN_WRITER_PAUSE parks a build
exactly at one phase (the exchange window is microseconds wide, random kills rarely hit it).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, VersionPolicy, batch
from repogen.build import build_repository
from repogen.errors import BuildError
from repogen.ondisk.validate import validate_repository
from repogen.ondisk.writer import remove_stale_staging, staging_pattern

ROOT = Path(__file__).resolve().parents[3]
MANY = "tests/apps/integrity/many.py:models"
PHASES = ("locked", "writing", "exchange", "exchanged", "done")
TRIALS = 20
PAUSED = ("locked", "writing", "exchange", "exchanged")  # one deterministic kill at each


def _cli(output: Path, generation: int, **env: str) -> subprocess.Popen[str]:
    environment = {**os.environ, "INTEGRITY_GENERATION": str(generation), "REPOGEN_WRITER_TRACE": "1", **env}
    return subprocess.Popen(
        [sys.executable, "-m", "repogen", "build", MANY, "-o", str(output)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _build(output: Path, generation: int) -> None:
    proc = _cli(output, generation)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


class _Tracer:
    """Reads a build's trace lines as they come; ``wait_for`` blocks until a phase is reached."""

    def __init__(self, proc: subprocess.Popen[str]):
        self.proc = proc
        self.phases: list[tuple[float, str]] = []
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.startswith("repogen-writer: "):
                with self._seen:
                    self.phases.append((time.monotonic(), line.split(": ", 1)[1].strip()))
                    self._seen.notify_all()

    def wait_for(self, phase: str, timeout: float = 60) -> float:
        with self._seen:
            assert self._seen.wait_for(lambda: any(p == phase for _, p in self.phases) or self.proc.poll(), timeout)
            return next(t for t, p in self.phases if p == phase)

    def kill(self) -> str:
        """SIGKILL; return the last phase the build had reached ("start" if none)."""
        self.proc.kill()
        self.proc.wait()
        self._thread.join(10)
        return self.phases[-1][1] if self.phases else "start"


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, str]]:
    """The complete file tree (path -> sha256) of generation 1 and of generation 2."""
    root = tmp_path_factory.mktemp("references")
    trees = {}
    for generation in (1, 2):
        _build(root / f"gen{generation}", generation)
        trees[generation] = _tree(root / f"gen{generation}")
    assert trees[1] != trees[2]
    return trees


def _assert_whole(output: Path, references: dict[int, dict[str, str]]) -> int:
    """Every payload is from one generation, the manifest matches every file, nothing extra is there.

    Payloads are compared with the reference builds; the vendored runtime files are not, since other
    work may edit them in this checkout while the test runs (validate still hashes them all).
    """
    payloads = {p: h for p, h in _tree(output).items() if p.endswith("/model.pkl")}
    matching = [g for g, ref in references.items() if payloads == {p: ref[p] for p in ref if p.endswith("/model.pkl")}]
    assert matching, f"{output} holds payloads of neither the old nor the new build: {sorted(payloads)[:4]}"
    assert validate_repository(output) == []
    return matching[0]


def _kill_at_random(tracer: _Tracer, rng: random.Random, trial: int, measured: float, writing: float) -> None:
    """Half the random kills anywhere in the build (mostly imports), half inside the locked write."""
    if trial % 2:
        time.sleep(rng.uniform(0, measured))
    else:
        tracer.wait_for("locked")
        time.sleep(rng.uniform(0, writing))


def test_sigkill_at_any_moment_leaves_the_previous_or_the_new_repository(tmp_path, references):
    output = tmp_path / "repo"
    started = time.monotonic()
    first = _Tracer(_cli(output, 1))
    assert first.proc.wait(60) == 0
    first.kill()
    measured = time.monotonic() - started
    times = dict((p, t) for t, p in first.phases)
    writing = times["done"] - times["locked"]
    generation, phases, stale = 1, Counter[str](), 0
    rng = random.Random(5)
    for trial in range(TRIALS):
        pause = PAUSED[trial] if trial < len(PAUSED) else ""
        tracer = _Tracer(_cli(output, 3 - generation, REPOGEN_WRITER_PAUSE=pause))
        if pause:
            tracer.wait_for(pause)
        else:
            _kill_at_random(tracer, rng, trial, measured, writing)
        phases[tracer.kill()] += 1
        stale += sum(1 for p in tmp_path.iterdir() if staging_pattern(output).fullmatch(p.name))
        generation = _assert_whole(output, references)
    _build(output, 3 - generation)
    assert _assert_whole(output, references) == 3 - generation
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"], "stale staging directories survived a build"
    print(
        f"\n30-model CLI build: {measured:.2f}s (locked write {writing:.2f}s); kills by last phase reached: "
        f"{dict(phases)}; staging dirs left behind by kills (then removed): {stale}"
    )
    assert phases["exchanged"] >= 1 and phases["exchange"] >= 1  # the paused trials hit both sides of the swap
    assert stale >= 1


def test_concurrent_builds_into_one_output_both_finish_with_one_whole_repository(tmp_path, references):
    output = tmp_path / "repo"
    procs = [_cli(output, generation) for generation in (1, 2, 1)]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], results
    _assert_whole(output, references)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]


def test_stale_staging_cleanup_removes_only_our_directories(tmp_path):
    output = tmp_path / "repo"
    ours = [tmp_path / ".repo.repogen-abc_1234", tmp_path / ".repo.repogen-zz99xy00-old"]
    keep_dirs = [
        tmp_path / ".repo.repogen-short",  # not a mkdtemp name
        tmp_path / ".repo.repogen-abcdefgh.repogen-12345678",  # staging of the output "repo.repogen-abcdefgh"
        tmp_path / ".other.repogen-abcdefgh",  # another output's
        tmp_path / "repo.repogen-abcdefgh",  # not hidden
    ]
    for directory in [*ours, *keep_dirs]:
        (directory / "sub").mkdir(parents=True)
        (directory / "sub" / "f").write_text("x")
    (tmp_path / ".repo.repogen-file0000").write_text("a file, not a directory")
    target = tmp_path / "precious"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "f").write_text("keep")
    (tmp_path / ".repo.repogen-link0000").symlink_to(target)
    assert sorted(remove_stale_staging(output)) == sorted(ours)
    assert all(d.is_dir() for d in keep_dirs) and (target / "sub" / "f").read_text() == "keep"
    assert (tmp_path / ".repo.repogen-file0000").is_file() and (tmp_path / ".repo.repogen-link0000").is_symlink()


# -- --model-version N ------------------------------------------------------------------------------------


def _repository(factor: float, max_batch_size: int = 8, policy: VersionPolicy | None = None, names=("A", "B")):
    models = Repository()

    def scaler(value: float):
        @batch
        def scale(x):
            return {"y": x * value}

        return scale

    for name in names:
        models.bind(
            model_name=name,
            infer_func=scaler(factor),
            inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=max_batch_size, version_policy=policy),
        )
    return models


def _versions(repo: Path, model: str) -> list[int]:
    return sorted(int(p.name) for p in (repo / model).iterdir() if p.is_dir())


def _manifest(repo: Path) -> dict:
    return json.loads((repo / "repogen.manifest.json").read_text())


def test_version_adds_beside_existing_versions_without_touching_them(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_repository(1.0), repo)
    before = {p: (p.stat().st_ino, p.read_bytes()) for p in (repo / "A" / "1").rglob("*") if p.is_file()}
    build_repository(_repository(2.0), repo, version=2)
    assert _versions(repo, "A") == _versions(repo, "B") == [1, 2]
    assert {p: (p.stat().st_ino, p.read_bytes()) for p in (repo / "A" / "1").rglob("*") if p.is_file()} == before
    assert "version_policy {\n  all {\n  }\n}" in (repo / "A" / "config.pbtxt").read_text()
    assert {"A/1/model.pkl", "A/2/model.pkl", "B/1/model.pkl", "B/2/model.pkl"} <= set(_manifest(repo)["files"])
    assert validate_repository(repo) == []
    one = (repo / "A" / "1" / "model.pkl").read_bytes()
    build_repository(_repository(3.0), repo, version=2)  # replace version 2 only
    assert (repo / "A" / "1" / "model.pkl").read_bytes() == one
    assert validate_repository(repo) == [] and _versions(repo, "A") == [1, 2]


def test_version_keeps_models_not_in_the_build_and_starts_an_empty_output(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_repository(1.0, names=("A",)), repo, version=4)
    assert _versions(repo, "A") == [4] and "version_policy" not in (repo / "A" / "config.pbtxt").read_text()
    build_repository(_repository(1.0, names=("B",)), repo, version=1)
    assert _versions(repo, "A") == [4] and _versions(repo, "B") == [1]
    assert _manifest(repo)["models"] == ["A", "B"] and validate_repository(repo) == []


def test_version_with_a_changed_config_is_refused_unless_forced(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_repository(1.0), repo)
    before = _tree(repo)
    with pytest.raises(BuildError, match=r"model 'A': A/config.pbtxt differ.*versions \[1\].*--force"):
        build_repository(_repository(1.0, max_batch_size=4), repo, version=2)
    assert _tree(repo) == before  # nothing written
    build_repository(_repository(1.0, max_batch_size=4), repo, version=2, force=True)
    assert "max_batch_size: 4" in (repo / "A" / "config.pbtxt").read_text() and _versions(repo, "A") == [1, 2]
    assert validate_repository(repo) == []


def test_version_policy_is_checked_against_every_version_present(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_repository(1.0), repo)
    build_repository(_repository(1.0, policy=VersionPolicy.specific(1, 3)), repo, version=3, force=True)
    assert "specific {\n    versions: 1\n    versions: 3\n" in (repo / "A" / "config.pbtxt").read_text()
    with pytest.raises(BuildError, match=r"VersionPolicy.specific\(5,\) names versions \[5\].*\[1, 3, 6\]"):
        build_repository(_repository(1.0, policy=VersionPolicy.specific(5)), repo, version=6, force=True)


def test_version_refuses_to_carry_a_corrupted_file(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_repository(1.0), repo)
    payload = repo / "B" / "1" / "model.pkl"
    built = payload.read_bytes()
    payload.write_bytes(built[:-1] + b"\x00")
    with pytest.raises(BuildError, match=r"B/1/model.pkl has sha256 .* lists .*restore that file"):
        build_repository(_repository(2.0), repo, version=2)
    assert _versions(repo, "A") == [1]
    payload.write_bytes(built)  # as built again: the session's bytecode gate reads every payload left behind


def test_version_needs_one_binding_per_model():
    models = _repository(1.0, names=("A",))
    models.bind(
        model_name="A",
        infer_func=lambda requests: requests,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        model_version=2,
        config=ModelConfig(max_batch_size=8),
    )
    with pytest.raises(BuildError, match=r"model 'A' is bound as versions \[1, 2\]; --model-version 3"):
        build_repository(models, "/nonexistent/never-written", version=3)


def test_cli_version_option(tmp_path):
    repo = tmp_path / "repo"
    args = [sys.executable, "-m", "repogen", "build", "examples/quickstart/app.py:models", "-o", str(repo)]
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True)
    subprocess.run([*args, "--model-version", "2"], cwd=ROOT, check=True, capture_output=True)
    assert _versions(repo, "AddSub") == [1, 2] and validate_repository(repo) == []
