"""docs/releases.md shows the release table as repogen/triton/releases.py holds it (the table's one home)."""

from __future__ import annotations

from pathlib import Path

from repogen.triton.releases import RELEASES

DOC = Path(__file__).resolve().parents[3] / "docs" / "releases.md"


def _rendered() -> str:
    rows = ["| NGC | tritonserver | Ubuntu | Python | glibc | numpy | CUDA | embeddable here |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in RELEASES:
        numpy = f"{r.numpy} (`numpy{r.numpy_pin}`)" if r.numpy_pin else "1.26.x, unpinned"
        wheel = f"nvidia-pytriton {r.wheel.pytriton}" if r.wheel else ""
        rows.append(
            f"| {r.ngc} | {r.tritonserver} | {r.ubuntu} | {r.python} | {r.glibc} | {numpy} | {r.cuda} | {wheel} |"
        )
    return "\n".join(rows) + "\n"


def test_the_docs_table_is_the_release_table() -> None:
    assert _rendered() in DOC.read_text(encoding="utf-8"), "docs/releases.md's table drifted from the release table"
