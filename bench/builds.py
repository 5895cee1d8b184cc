"""Build-time and cold-start benchmarks: `repogen build` of N models; 20 models to READY, generated vs hand-written.

Build time is measured two ways, each in a fresh process so nothing is cached between runs:
``library`` times ``repogen.build_app`` inside the process (import of repogen excluded);
``cli`` times the whole ``repogen build`` command (interpreter start and imports included),
which is what a user or a CI job waits for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import stats

BENCH = Path(__file__).resolve().parent
MANY = f"{BENCH / 'apps' / 'many.py'}:models"

_LIBRARY_TIMER = """
import sys, time
from repogen import build_app
t = time.perf_counter()
build_app(sys.argv[1], sys.argv[2], force=True)
print(time.perf_counter() - t)
"""


def _env(models: int) -> dict[str, str]:
    return {**os.environ, "BENCH_MODELS": str(models)}


def build_library_s(models: int, output: Path) -> float:
    """Seconds ``build_app`` takes for ``models`` models, in a fresh interpreter."""
    shutil.rmtree(output, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-c", _LIBRARY_TIMER, MANY, str(output)], env=_env(models), check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def build_cli_s(models: int, output: Path) -> float:
    """Wall-clock seconds of ``repogen build`` (a fresh process, imports included)."""
    shutil.rmtree(output, ignore_errors=True)
    cli = Path(sys.executable).with_name("repogen")
    began = time.perf_counter()
    subprocess.run([str(cli), "build", MANY, "-o", str(output)], env=_env(models), check=True, capture_output=True)
    return time.perf_counter() - began


def _load_all(url: str, models: list[str]) -> float:
    """Seconds until every model is loaded, loads issued together (Triton loads them in parallel)."""
    import tritonclient.http as httpclient

    def load(model: str) -> None:  # a client per thread: tritonclient.http (gevent) is not thread-safe
        own = httpclient.InferenceServerClient(url, network_timeout=600.0)
        try:
            own.load_model(model)
        finally:
            own.close()

    client = httpclient.InferenceServerClient(url, network_timeout=600.0)
    began = time.monotonic()
    try:
        with ThreadPoolExecutor(len(models)) as pool:
            list(pool.map(load, models))
        return time.monotonic() - began
    finally:
        for model in models:
            client.unload_model(model)
        deadline = time.monotonic() + 120
        while any(client.is_model_ready(m) for m in models) and time.monotonic() < deadline:
            time.sleep(0.1)
        client.close()


def cold_start(work: Path, models: int, reps: int) -> dict[str, Any]:
    """Time to READY of ``models`` generated models against as many hand-written ones, in the same server.

    One server in explicit model-control mode; each round loads one set, unloads it, then the other,
    the order alternating, so both pay the same machine state.
    """
    from repos import assemble_cold_start
    from servers import repogen_server

    repo, generated, handwritten = assemble_cold_start(work, models)
    server = repogen_server(repo, work / f"cold-start-{models}.log", ("--model-control-mode=explicit",))
    times: dict[str, list[float]] = {"generated": [], "handwritten": []}
    server.start().wait_ready(120)
    try:
        for rnd in range(reps):
            sets = [("generated", generated), ("handwritten", handwritten)]
            for label, names in sets if rnd % 2 == 0 else reversed(sets):
                times[label].append(_load_all(server.http_url, names))
                print(f"  cold start r{rnd} {models} {label} models: {times[label][-1]:.2f} s", flush=True)
    finally:
        server.stop()
    ratio = [g / h for g, h in zip(times["generated"], times["handwritten"], strict=True)]
    return {"models": models, **{k: stats.spread(v) for k, v in times.items()}, "ratio": stats.spread(ratio)}


def cold_start_and_build(work: Path, reps: int) -> dict[str, Any]:
    """Build time for 10 and 100 models (library and CLI), and cold start of 20 models."""
    out: dict[str, Any] = {}
    for models in (10, 100):
        lib = [build_library_s(models, work / f"build-{models}") for _ in range(reps)]
        cli = [build_cli_s(models, work / f"build-{models}") for _ in range(reps)]
        out[f"build_{models}"] = {"library_s": stats.spread(lib), "cli_s": stats.spread(cli)}
        print(f"  build {models:3} models: library {lib}  cli {cli}", flush=True)
    out["cold_start"] = cold_start(work, 20, reps)
    return out
