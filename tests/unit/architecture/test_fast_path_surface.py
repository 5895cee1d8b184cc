"""Generated model.py files subclass the runtime's ``TritonPythonModel`` and call into it: that is a
contract with files already built, which mypy never sees. Every name they use from it must be public
and exist there; a rename fails here instead of in a deployed repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RUNTIME = "".join(  # TritonPythonModel and the base class it takes its responses from
    (ROOT / "repogen" / "runtime" / name).read_text() for name in ("triton_model.py", "responses.py")
)
GENERATED = sorted((ROOT / "tests" / "golden").glob("*/expected/*/1/model.py")) + sorted(
    (ROOT / "model_repository_templates").glob("model*.py.tmpl")
)
SURFACE = {
    "batch_call", "output_plans", "checked_results", "batch_results", "output_pairs", "finish_batch", "finish_fused",
    "failure", "failures", "failed_together", "response", "responses", "stopped", "infer_func", "queued_long",
    "answer_cancelled", "last_execute", "ask_after",
}  # fmt: skip


def _provided(name: str) -> bool:
    return bool(re.search(rf"^    def {name}\(|self\.{name}(: [^=]+)? = ", RUNTIME, flags=re.MULTILINE))


def test_the_surface_is_in_the_runtime():
    assert [name for name in sorted(SURFACE) if not _provided(name)] == []


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_files_use_only_the_public_surface(path):
    text = path.read_text()
    used = set(re.findall(r"self\.([A-Za-z_]\w*)", text))
    defined = set(re.findall(r"^    def (\w+)\(", text, flags=re.MULTILINE))
    assert sorted(used - defined - SURFACE) == []
