"""The backend stub's instructions per request of the benchmark's models (callgrind): which models are counted
together, and counting them on a server of their own (`bench/run.py --instructions`; `make bench` after the rest)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import streaming
import waiting
from repos import FIXED_BATCHES
from servers import repogen_server

from repogen.testing import callgrind

MB4 = 1 << 20  # float32 elements in 4 MiB

COUNTED = {  # callgrind: (label, model, float32 elements[, the stubs counted when not the model's own[, requests
    # per execute]])
    "16 floats": (
        ("generated", "Double", 16),
        ("handwritten", "DoubleHW", 16),
        ("hand-written, DLPack", "DoubleDLPack", 16),
    ),
    "4 MB": (
        ("generated", "Double", MB4),
        ("handwritten", "DoubleHW", MB4),
        ("hand-written, DLPack", "DoubleDLPack", MB4),
    ),
    **{
        f"16 floats, {n} requests per execute": (
            ("generated", f"DoubleX{n}", 16, (), n),
            ("handwritten", f"DoubleHWX{n}", 16, (), n),
        )
        for n in FIXED_BATCHES
    },
    **{
        f"onnx {size.lower()}, {n} request{'s' * (n > 1)} per execute, 1 thread": (
            ("generated", f"Onnx{size}{variant}", 256, (), n),
            ("hand-written model.py", f"Onnx{size}HW{variant}", 256, (), n),
            ("hand-batched class", f"Onnx{size}Class{variant}", 256, (), n),
            # after the baselines (report.py divides by the second); QUIET: repogen/testing/callgrind.quiet_copy
            ("generated, no cancellation check", f"Onnx{size}{variant}{callgrind.QUIET}", 256, (), n),
        )
        for size in ("Small", "Mlp")
        for variant, n in (("T1", 1), ("X4", 4))
    },
    "pipeline": (("fused (repogen)", "Fused", 16), ("one model (hand-written)", "HWOne", 16)),
    streaming.COUNTED_GROUP: streaming.COUNTED,
    **waiting.COUNTED,
    "ensemble, 3 steps": (
        ("ensemble (repogen)", "Pipeline", 16, ("StepAdd", "StepMul", "StepSub")),
        ("ensemble (hand-written)", "HWPipeline", 16, ("HWStepAdd", "HWStepMul", "HWStepSub")),
    ),
}


SERVED_APART = (
    tuple(group for group in COUNTED if not group.startswith("onnx")),
    tuple(group for group in COUNTED if group.startswith("onnx")),
)
"""The groups counted on one callgrind server each: the ONNX models' stubs (onnxruntime under valgrind) apart from
the rest, since one stub that misses python_backend's health check fails its server's every count after it (the
run of 2026-11-30 09:53 lost every count to ``Stub process 'OnnxMlpX4_0_0' is not healthy``)."""


def count_instructions(
    repository: Path, work: Path, requests: int, groups: list[str] | None = None
) -> dict[str, dict[str, float]]:
    """Stub instructions per request of the counted models (``groups`` of COUNTED, else all), on a callgrind server."""
    counted_groups = {  # a group whose models the repository lacks (the ONNX ones, without a builder venv) is left out
        group: COUNTED[group]
        for group in groups or COUNTED
        if all((repository / c[1].removesuffix(callgrind.QUIET)).is_dir() for c in COUNTED[group])
    }
    server = repogen_server(repository, work / "unused.log")
    # Only the counted models: two dozen stubs starting at once under valgrind time out their handshake.
    counted = work / "callgrind-repository"
    shutil.rmtree(counted, ignore_errors=True)
    cases = {  # a case's inputs: that many float32 elements of x, or the arrays themselves
        f"{group}/{case[0]}": (case[1], _inputs(case[2]), *(case[3:] or ((),)))
        for group, pairs in counted_groups.items()
        for case in pairs
    }
    for name in sorted({name for model, _, stubs, *_ in cases.values() for name in (model, *stubs)}):
        if name.endswith(callgrind.QUIET):  # the same model without the check valgrind's pace sets off
            callgrind.quiet_copy(repository, name.removesuffix(callgrind.QUIET), counted / name)
        else:
            shutil.copytree(repository / name, counted / name, copy_function=os.link)
    counts = callgrind.instructions_per_request(counted, server.install, server.venv, cases, work, requests)
    return {group: {case[0]: counts[f"{group}/{case[0]}"] for case in pairs} for group, pairs in counted_groups.items()}


def _inputs(spec: Any) -> dict[str, np.ndarray]:
    return spec if isinstance(spec, dict) else {"x": np.zeros((1, spec), np.float32)}
