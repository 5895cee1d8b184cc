"""Every build the GPU suite makes, into one directory: what the CPU rehearsal (``make gpu-rehearsal``) checks
before the suite stops at its GPU check. cupy's app is built only where cupy imports, as the suite serves it; an
app that makes its models on a GPU at import (``MADE_ON_GPU``) only where torch sees one (the CPU side of what it
does is tests/unit/ir/test_made_on_gpu.py).

    python tests/gpu/builds.py OUT
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from repogen.testing.gpu import MADE_ON_GPU, SUITE_APPS, build

ROOT = Path(__file__).resolve().parents[2]


def main(out: Path) -> int:
    failed = 0
    for number, app in enumerate(SUITE_APPS):
        if "cupy" in app and importlib.util.find_spec("cupy") is None:
            print(f"{app}: not built, cupy is not installed (the suite skips its models, saying so)")
            continue
        if app in MADE_ON_GPU and not _cuda():
            print(f"{app}: not built, it moves its models to \"cuda\" at import and torch sees no GPU here (the suite "
                  "builds it on the GPU machine; tests/unit/ir/test_made_on_gpu.py holds the CPU side)")  # fmt: skip
            continue
        start = time.monotonic()
        done = build(app, out / f"{number}-{Path(app.split(':')[0]).stem}", ROOT)
        print(f"{app}: {'built' if done.returncode == 0 else 'FAILED'} in {time.monotonic() - start:.1f} s", flush=True)
        if done.returncode != 0:
            failed += 1
            print(done.stdout + done.stderr)
    return 1 if failed else 0


def _cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
