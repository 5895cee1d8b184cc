"""``repogen build`` restarts under a fixed hash seed with the same interpreter flags and the same repogen.

A set inside a container is pickled in string-hash order (no pickler hook reaches it), so the restart
is what makes such a payload byte-identical across runs; ``python -m repogen`` would have put the working
directory first on ``sys.path`` and dropped ``-X``/``-O``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import repogen
from repogen.fixed_seed import interpreter_flags, repogen_command

CONSOLE_SCRIPT = Path(sys.executable).parent / "repogen"

APP = """\
import json, os, sys

import numpy as np

import repogen
from repogen import ModelConfig, Repository, Tensor, batch

TABLE = {"labels": {"cat", "dog", "emu", "fox", "gnu", "hen", "ibis", "jay"}}  # a set inside a dict
with open(os.environ["REPOGEN_TEST_RECORD"], "w") as record:
    json.dump({"optimize": sys.flags.optimize, "dev_mode": sys.flags.dev_mode, "repogen": repogen.__file__,
               "hash_randomization": sys.flags.hash_randomization}, record)

models = Repository()


@batch
def count(x):
    return {"y": x * len(TABLE["labels"])}


models.bind("Count", count, [Tensor(name="x", dtype=np.float32, shape=(-1,))],
            [Tensor(name="y", dtype=np.float32, shape=(-1,))], config=ModelConfig(max_batch_size=8))
"""


def _build(tmp_path: Path, prefix: list[str], seed: str, name: str) -> tuple[bytes, dict[str, object]]:
    record = tmp_path / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if k != "REPOGEN_NO_REEXEC"}
    env.update(PYTHONHASHSEED=seed, REPOGEN_TEST_RECORD=str(record))
    out = tmp_path / name
    subprocess.run([*prefix, "build", "app.py:models", "-o", str(out)], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    return (out / "Count" / "1" / "model.pkl").read_bytes(), json.loads(record.read_text())


def test_restart_keeps_flags_this_repogen_and_pins_nested_sets(tmp_path: Path) -> None:
    assert CONSOLE_SCRIPT.is_file(), f"no {CONSOLE_SCRIPT}: install repogen into this venv (`make install`)"
    (tmp_path / "app.py").write_text(APP)
    poisoned = tmp_path / "repogen"  # a folder named repogen in the working directory must not run
    poisoned.mkdir()
    (poisoned / "__init__.py").write_text('raise SystemExit("the repogen of the working directory ran")\n')
    prefix = [sys.executable, "-X", "dev", "-O", str(CONSOLE_SCRIPT)]
    first, seen = _build(tmp_path, prefix, "1", "one")
    second, _ = _build(tmp_path, prefix, "4242", "two")
    assert first == second
    assert seen == {"optimize": 1, "dev_mode": True, "repogen": repogen.__file__, "hash_randomization": 0}


def test_the_command_repeats_the_flags_and_names_this_package() -> None:
    command = repogen_command("build", "x.py:models")
    assert command[0] == sys.executable and command[-2:] == ["build", "x.py:models"]
    assert command[1 : 1 + len(interpreter_flags())] == interpreter_flags()
    assert command[-3] == str(Path(repogen.__file__).resolve().with_name("fixed_seed_cli.py"))
    assert "-m" not in command and "-c" not in command
