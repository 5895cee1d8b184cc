"""GPU memory of bench/gpu.py's instances: the peak each one holds under load.

Read from the device's own figure (``nvidia-smi --query-gpu=memory.used``), the one that holds inside a container,
where nvidia-smi's per-process pids are the host's and match none of the container's. One model is under load at a
time, so what the device's memory does during a point is that model's doing:

* what unloading a model frees at the end of the run is its instance at rest: its stub's CUDA context, the framework,
  its weights and every block its allocator kept after the load it served;
* what a point raised the device's memory to above the higher of the levels before and after it is what the model
  took under load and gave back within the point (the allocator returning blocks, a workspace freed);

and the instance's peak under load is the first plus the most of the second over its points.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

QUERY = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "--id=0"]
SAMPLE_MS = 50  # nvidia-smi's own loop; a point lasts ~2.5 s, its transients as long as its batches


def used_mib() -> float:
    """GPU 0's used memory (MiB), the device's own figure."""
    return float(subprocess.run(QUERY, capture_output=True, text=True, check=True).stdout.strip())


class Sampler:
    """GPU 0's used memory every ``SAMPLE_MS``, each reading stamped (``time.monotonic``) as it arrives: one
    nvidia-smi for the whole run, so that sampling costs the points nothing but a pipe's read."""

    def __init__(self, command: Sequence[str] = (*QUERY, f"--loop-ms={SAMPLE_MS}")):
        self.command = list(command)
        self.readings: list[tuple[float, float]] = []
        self._process: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._read, name="gpu-memory", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                self.readings.append((time.monotonic(), float(line.strip())))
            except ValueError:  # a line nvidia-smi prints about itself
                continue

    def __exit__(self, *exc: Any) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)


def transient_mib(readings: Sequence[tuple[float, float]], begun: float, ended: float) -> float | None:
    """How far the device's memory rose during ``[begun, ended]`` above the higher of its levels just before and
    just after: memory a point took and gave back. None without a reading on each side of the point."""
    before = [mib for at, mib in readings if at <= begun]
    during = [mib for at, mib in readings if begun < at < ended]
    after = [mib for at, mib in readings if at >= ended]
    if not before or not after:
        return None
    rest = max(before[-1], after[0])
    return max(0.0, max([*during, after[0]]) - rest)


def peaks(at_rest: dict[str, float], points: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each model's peak under load (MiB): at rest (what unloading it freed) plus the most any of its points took
    and gave back (``transient_mib`` on the points, ``gpu_transient_mib``; absent where not sampled)."""
    transient: dict[str, float] = {}
    for point in points:
        if point.get("gpu_transient_mib") is not None:
            transient[point["model"]] = max(transient.get(point["model"], 0.0), point["gpu_transient_mib"])
    return {
        model: {"at_rest": mib, "transient": transient.get(model, 0.0), "peak": mib + transient.get(model, 0.0)}
        for model, mib in at_rest.items()
    }


def settled_mib(poll_s: float = 0.25, limit_s: float = 5.0) -> float:
    """The device's used memory once it has fallen and stopped falling (``poll_s`` apart): a stub's exit frees its
    context a moment after Triton marks the model unloaded. At ``limit_s``, whatever it reads then."""
    last, fallen, deadline = used_mib(), False, time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(poll_s)
        now = used_mib()
        if now >= last and fallen:
            return now
        fallen, last = fallen or now < last, now
    return last


def at_rest(server: Any, models: Iterable[str]) -> dict[str, float]:
    """MiB each of ``models`` (one instance each) frees when unloaded, one after another, at the run's end."""
    found = {}
    with server.client(timeout=60.0) as client:
        for model in models:
            if not client.is_model_ready(model):
                print(f"GPU memory of {model}'s instance: not read, it is not loaded", flush=True)
                continue
            before = used_mib()
            client.unload_model(model)
            deadline = time.monotonic() + 20
            while client.is_model_ready(model) and time.monotonic() < deadline:
                time.sleep(0.2)
            found[model] = before - settled_mib()
            print(f"GPU memory of {model}'s instance at rest: {found[model]:.0f} MiB", flush=True)
    return found
