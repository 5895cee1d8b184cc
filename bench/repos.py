"""Assemble the one model repository the benchmark's tritonserver serves.

repogen builds ``bench/apps/app.py`` into ``<work>/generated``; the served repository is a copy of
those models plus the hand-written ones from ``bench/handwritten``. ``DoubleHW`` gets the generated
``Double``'s config.pbtxt (renamed) so the comparison runs under byte-for-byte the same
configuration apart from the name.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from repogen import build_app

BENCH = Path(__file__).resolve().parent
HANDWRITTEN = BENCH / "handwritten"


def renamed_config(text: str, old: str, new: str) -> str:
    """``name: "Double"`` and instance-group names ``"Double_0"`` become ``new``'s."""
    return re.sub(rf'"{re.escape(old)}(_\d+)?"', lambda m: f'"{new}{m.group(1) or ""}"', text)


def assemble(work: Path) -> Path:
    """Build the generated models and lay out the served repository under ``work``; return it."""
    generated = work / "generated"
    build_app(f"{BENCH / 'apps' / 'app.py'}:models", generated, force=True)
    repo = work / "repository"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    for model in sorted(p for p in generated.iterdir() if p.is_dir()):
        shutil.copytree(model, repo / model.name)
    for model in sorted(p for p in HANDWRITTEN.iterdir() if p.is_dir()):
        shutil.copytree(model, repo / model.name)
    config = (generated / "Double" / "config.pbtxt").read_text()
    (repo / "DoubleHW" / "config.pbtxt").write_text(renamed_config(config, "Double", "DoubleHW"))
    (repo / "Pipeline" / "1").mkdir(exist_ok=True)  # an ensemble still needs its version directory
    return repo
