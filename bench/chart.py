"""docs/benchmarks.png: throughput per implementation at every payload point, median with min–max.

Runs in the bench venv (``bench/.venv-pytriton``, which has matplotlib): plotting is not one of
repogen's dependencies. Usage: ``bench/.venv-pytriton/bin/python bench/chart.py [RESULTS.json]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from report import DOC, latest  # noqa: E402

IMPLS = (("generated", "#2a7fff"), ("handwritten", "#7f7f7f"), ("pytriton", "#ff7f2a"))


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve() if argv else latest()
    result = json.loads(path.read_text())
    rows = [r for r in result["summary"] if r["group"] == "payload"]
    protocols = result["protocols"]
    payloads = ((16, "16 floats"), (1 << 20, "4 MB"))
    fig, axes = plt.subplots(len(protocols), 2, figsize=(11, 3.6 * len(protocols)), squeeze=False)
    for i, protocol in enumerate(protocols):
        for j, (elements, label) in enumerate(payloads):
            ax = axes[i][j]
            concurrency = sorted({r["concurrency"] for r in rows if r["elements"] == elements})
            for k, (impl, color) in enumerate(IMPLS):
                pts = {r["concurrency"]: r["throughput"] for r in rows
                       if r["protocol"] == protocol and r["elements"] == elements and r["impl"] == impl}  # fmt: skip
                xs = [c + (k - 1) * 0.27 for c in range(len(concurrency))]
                med = [pts[c]["median"] if c in pts else 0 for c in concurrency]
                low = [m - pts[c]["min"] if c in pts else 0 for c, m in zip(concurrency, med, strict=True)]
                high = [pts[c]["max"] - m if c in pts else 0 for c, m in zip(concurrency, med, strict=True)]
                err = [low, high]
                ax.bar(xs, med, width=0.27, color=color, label=impl, yerr=err, capsize=3)
            ax.set_xticks(range(len(concurrency)), [f"c={c}" for c in concurrency])
            ax.set_title(f"{protocol.upper()}, {label}")
            ax.set_ylabel("inferences/s")
            ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend()
    fig.suptitle(
        f"perf_analyzer, tritonserver 2.51, {result['machine']['nproc']} CPU cores: median, bars = min–max over rounds"
    )
    fig.tight_layout()
    out = DOC.with_suffix(".png")
    fig.savefig(out, dpi=90)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
