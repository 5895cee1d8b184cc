"""Shipped packages: time to READY against the same model on a server where they are installed, and rebuild time.

``tests/apps/packages``'s ``Forest`` (scikit-learn + scipy) is built twice by a builder venv holding
its packages: shipped (the default) and ``--packages record``. The shipped build is served from the
numpy-only Python 3.10 venv every benchmark uses; the recorded one from a Python 3.10 venv where pip
installed numpy 1.26.4, scikit-learn and scipy (with the bytecode pip compiles), as a custom image
would have them. Both servers run tritonserver 2.51 in explicit mode; each round loads ``Forest``
on one, unloads it, then on the other (order alternating), so both pay the same machine state.

Rebuild time: the same app built again into the same output, shipped against recorded (no pip,
no download: only links), interleaved.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import stats
import tritonclient.http as httpclient
from servers import RELEASE, repogen_server

from repogen.server import TritonServer, ensure_server
from repogen.server.provision.install import venv_info
from repogen.server.provision.pythons import require_python
from repogen.testing.builders import checkout_root, ensure_builder_venv
from repogen.testing.packages_app import APP, BUILDER_PACKAGES, build_packages_app, builder_python

PREINSTALLED = ("numpy==1.26.4", "scikit-learn==1.6.1", "scipy==1.15.3")


def _preinstalled_venv(work: Path) -> Path:
    venv = work / "server-venv-sklearn"
    if not (venv / "bin" / "python").exists():
        subprocess.run([str(require_python(RELEASE.python)), "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *PREINSTALLED], check=True)
    return venv


def _load_s(url: str, model: str) -> float:
    client = httpclient.InferenceServerClient(url, network_timeout=600.0)
    try:
        began = time.monotonic()
        client.load_model(model)
        took = time.monotonic() - began
        client.unload_model(model)
        deadline = time.monotonic() + 60
        while client.is_model_ready(model) and time.monotonic() < deadline:
            time.sleep(0.1)
        return took
    finally:
        client.close()


def ready_time(work: Path, cache: Path, reps: int) -> dict[str, Any]:
    shipped, recorded = work / "forest-shipped", work / "forest-recorded"
    build_packages_app(cache, shipped, "--force")
    build_packages_app(cache, recorded, "--force", "--packages", "record")
    explicit = ("--model-control-mode=explicit",)
    servers = {
        "shipped": repogen_server(shipped, work / "ready-shipped.log", explicit),
        "installed": TritonServer(recorded, ensure_server(RELEASE), venv_info(_preinstalled_venv(work)),
                                  log_path=work / "ready-installed.log", extra_args=explicit),
    }  # fmt: skip
    times: dict[str, list[float]] = {label: [] for label in servers}
    try:
        for server in servers.values():
            server.start().wait_ready(120)
        for rnd in range(reps + 1):  # round 0 warms the page cache for both and is not counted
            order = list(servers) if rnd % 2 == 0 else list(reversed(servers))
            for label in order:
                took = _load_s(servers[label].http_url, "Forest")
                if rnd:
                    times[label].append(took)
                print(f"  READY r{rnd} Forest {label}: {took:.2f} s", flush=True)
    finally:
        for server in servers.values():
            server.stop()
    ratio = [s / i for s, i in zip(times["shipped"], times["installed"], strict=True)]
    return {**{k: stats.spread(v) for k, v in times.items()}, "ratio": stats.spread(ratio)}


def rebuild_time(work: Path, cache: Path, reps: int) -> dict[str, Any]:
    venv = ensure_builder_venv(builder_python(), cache, BUILDER_PACKAGES)
    python = str(venv / "bin" / "python")
    timer = "import sys,time; from repogen import build_app; from repogen.packages import PackageOptions as P\n" \
        "build_app(sys.argv[1], sys.argv[2], force=True, packages=P(sys.argv[3]))\n" \
        "t=time.perf_counter(); build_app(sys.argv[1], sys.argv[2], force=True, packages=P(sys.argv[3]))\n" \
        "print(time.perf_counter()-t)"  # fmt: skip
    times: dict[str, list[float]] = {"ship": [], "record": []}
    for rnd in range(reps):
        for mode in ("ship", "record") if rnd % 2 == 0 else ("record", "ship"):
            out = subprocess.run(
                [python, "-c", timer, APP, str(work / f"rebuild-{mode}"), mode], check=True, capture_output=True,
                text=True, env={"REPOGEN_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}, cwd=checkout_root(),
            )  # fmt: skip
            times[mode].append(float(out.stdout.strip().splitlines()[-1]))
            print(f"  rebuild r{rnd} {mode}: {times[mode][-1]:.2f} s", flush=True)
    added = [s - r for s, r in zip(times["ship"], times["record"], strict=True)]
    return {**{k: stats.spread(v) for k, v in times.items()}, "added_s": stats.spread(added)}


def packages_bench(work: Path, cache: Path, reps: int) -> dict[str, Any]:
    return {"ready": ready_time(work, cache, reps), "rebuild": rebuild_time(work, cache, reps)}


if __name__ == "__main__":
    from repogen.server.provision.install import default_cache_dir

    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/repogen-bench-packages")
    where.mkdir(parents=True, exist_ok=True)
    print(packages_bench(where, default_cache_dir(), int(sys.argv[2]) if len(sys.argv) > 2 else 3))
