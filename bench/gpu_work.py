"""The Python work of one ``execute`` on a GPU instance, counted on the CPU (issue 57, item 4): the generated model
against NVIDIA's idiom and a best-practice hand (bench/handwritten/Gpu*NV, Gpu*BP), on the emulated GPU.

For each workload of bench/gpu.py that batches (``GpuTorch``: a 256-wide ``Linear``; ``GpuImage``: 3x224x224 FP32
images in, 1000 scores out), each model runs in this process as python_backend runs it: the generated ``model.py``
of a build of bench/apps/gpu_app.py, and each twin under its generated model's config, all on a ``KIND_GPU``
instance of device 0 of the emulated GPU (repogen.testing.emulated_gpu), python_backend's side played by
repogen.local's backend shim. A point is an ``execute`` of 1, 8 or 32 requests of one row each, answered for network
clients (the server then fetches what is left on the GPU: ``backend_shim.deliver``, outside the count).

What is counted, and how (docs/benchmarks.md, "GPU: the Python work of one execute"):

* **instructions**: callgrind's count of what the stub's process runs for the ``execute`` (model.py, the runtime, the
  user's callable, Python, numpy, torch's argument parsing), the emulated device's own work and python_backend's
  (C++ in the real stub, Python in the shim) left out. Counting is switched with callgrind's client requests
  (bench/callgrind_requests/_callgrind.c, built here with the C compiler): on around the ``execute``, off inside each
  call into the emulated device or the shim where it is the outermost (``Emulator.gate``), and, for a torch method
  that torch's C++ hands to the tensor subclass, off inside ``torch::handle_torch_function_no_python_arg_parser``
  (``--toggle-collect``). What the Python on the way into a left-out call costs (a wrapper's frame, torch's Python
  ``handle_torch_function`` for ``norm`` and ``split``) is measured in the same run on calls that do nothing and
  subtracted, per call (``calibration`` in the result); the counts before subtraction are kept (``raw``).
* **tensor API**: calls of torch (``torch.*``, tensor methods, ``torch.cuda``) on emulated tensors, or that make or
  move them, as the code under test makes them (the emulator's own calls inside one are not counted);
  **pb_utils**: calls of python_backend's API; **Python calls**: Python functions entered (``sys.setprofile``, in
  a run without valgrind), the emulator's, the shim's and torch's ``__torch_function__`` handling left out.
* **copies/waits**: what the emulated device was asked (host-to-device, device-to-host copies, host waits) and what
  the server did after ``execute`` (``LoadGPUBuffers`` round trips, its blocking copies).

Each point is the median of ``--executes`` counted executes after warm-ups; the runtime asks no request whether it
was cancelled (its threshold raised, as repogen/testing/callgrind.py's ``Quiet`` copies do: under valgrind every
execute is slow enough to ask). Needs valgrind and a C compiler with Python's headers.

    python bench/gpu_work.py [--out bench/results/gpu-work.json] [--requests 1 8 32]
    python bench/gpu_work.py --table-of bench/results/gpu-work.json     # Markdown for docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_work_child import CALIBRATION_CALLS, CPP_KINDS, WORKLOADS, child  # bench/gpu_work_child.py

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
APP = BENCH / "apps" / "gpu_app.py"
REQUESTS = (1, 8, 32)
# torch's C++ hands a call on a tensor subclass to __torch_function__ here: the overload that the other one (taking a
# TorchFunctionName) jumps to, which callgrind sees as leaving that one
TORCH_DISPATCH = "*handle_torch_function_no_python_arg_parser*OperatorHandle*"


def build(out: Path) -> Path:
    command = [sys.executable, "-m", "repogen", "build", str(APP) + ":models", "-o", str(out), "--packages", "record"]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return out


def build_requests(out: Path) -> Path:
    """bench/callgrind_requests/_callgrind.c built for this Python into ``out`` (a folder to put on sys.path)."""
    import sysconfig

    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise SystemExit(
            "bench/gpu_work.py builds a small C extension (callgrind's client requests): install a C compiler"
        )
    source = BENCH / "callgrind_requests" / "_callgrind.c"
    target = out / f"_callgrind{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", str(target), str(source)], check=True)
    return out


def _child_command(repo: Path, mode: str, options: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--repo", str(repo), *options]


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _environment(path: Path | None = None) -> dict[str, str]:
    # one thread for torch, as repeatable counts need; the extension's folder first on the path
    extra = {"PYTHONPATH": os.pathsep.join(filter(None, [str(path or ""), os.environ.get("PYTHONPATH", "")]))}
    return os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"} | extra


def counted(repo: Path, options: list[str], extension: Path) -> list[dict[str, Any]]:
    """The calls of every point (no valgrind)."""
    done = subprocess.run(_child_command(repo, "count", options), cwd=ROOT, env=_environment(extension),
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the counting run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return _lines(done.stdout)


def instructions(repo: Path, options: list[str], executes: int, work: Path, extension: Path) -> tuple[list[dict], dict]:
    """Every point's counted executes under callgrind (their instructions, raw and less the calibrated way into
    left-out calls), and the calibration."""
    dumps = work / "dumps"
    dumps.mkdir()
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                f"--toggle-collect={TORCH_DISPATCH}", f"--callgrind-out-file={dumps}/cg.%p"]  # fmt: skip
    done = subprocess.run([*valgrind, *_child_command(repo, "callgrind", options)], cwd=ROOT,
                          env=_environment(extension), capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the callgrind run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    found = {label: costs for label, costs in map(_costs, dumps.glob("cg.*.*"))}
    calls = CALIBRATION_CALLS
    loop = found["calibration loop"]["total"]

    def apart(kind: str) -> float:  # an emulated tensor's way, less a plain one's
        return (found[f"calibration {kind} emulated"]["total"] - found[f"calibration {kind} plain"]["total"]) / calls

    calibration = {"wrapper": (found["calibration wrapper"]["total"] - loop) / calls,
                   "pb_utils": (found["calibration pb_utils"]["total"] - loop) / calls, "handler": apart("handler"),
                   "C++ getter": apart("getter"), "C++ method": apart("method")}  # fmt: skip
    lines = _lines(done.stdout)
    for line in lines:
        prefix = f"{line['workload']} {line['role']} {line['requests']} #"
        line["instructions"] = [found[f"{prefix}{n}"] for n in range(executes)]
    return lines, calibration


_COPY = re.compile(r"__(memmove|memcpy|memset)\w*|(memmove|memcpy|memset)$")


def _costs(dump: Path) -> tuple[str, dict[str, int]]:
    """A dump's label, its instructions in all, and those of the C library's memcpy/memmove/memset (bulk copies)."""
    total = copies = 0
    label = ""
    names: dict[str, str] = {}
    name, after_call = "", False
    for line in dump.read_text().splitlines():
        if line.startswith("desc: Trigger: Client Request: "):
            label = line.removeprefix("desc: Trigger: Client Request: ")
        elif line.startswith(("summary:", "totals:")):
            total = int(line.split()[1])
        elif line.startswith(("fn=", "cfn=")):  # a name is given once, by either, then its (id) alone
            key, _, given = line.partition("=")[2].partition(" ")
            found = names.setdefault(key, given) if given else names.get(key, key)
            if line.startswith("fn="):
                name = found
        elif line.startswith("calls="):
            after_call = True
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            if after_call:  # a call's inclusive cost: the callee's own lines hold it
                after_call = False
            elif _COPY.search(name):
                copies += int(line.split()[-1])
    return label, {"total": total, "copies": copies}


def combine(calls: list[dict[str, Any]], costs: list[dict[str, Any]], calibration: dict) -> list[dict[str, Any]]:
    """Each point's figures: instructions less the calibrated way into each left-out call (module docstring)."""
    points = []
    for mine, cost in zip(calls, costs, strict=True):
        assert (mine["workload"], mine["role"], mine["requests"]) == (cost["workload"], cost["role"], cost["requests"])
        raw, net = [], []
        dumps = cost["instructions"]
        for dump, counts in zip(dumps, cost["counts"], strict=True):
            handler, shim = counts.get("through torch's Python handler", 0), counts.get("pb_utils", 0)
            wrapped = counts.get("gated", 0) - handler - shim
            raw.append(dump["total"])
            left_out = (
                wrapped * calibration["wrapper"] + shim * calibration["pb_utils"] + handler * calibration["handler"]
            )
            left_out += sum(counts.get(f"through torch's {kind}", 0) * calibration[kind] for kind in CPP_KINDS)
            net.append(dump["total"] - dump["copies"] - left_out)
        counts = mine["counts"][-1]
        points.append({
            "workload": mine["workload"], "role": mine["role"], "model": mine["model"], "requests": mine["requests"],
            "instructions": round(statistics.median(net)), "raw": round(statistics.median(raw)),
            "spread": max(raw) - min(raw), "memcpy": round(statistics.median(c["copies"] for c in dumps)),
            "python_calls": round(statistics.median(mine["python_calls"])),
            "tensor_api": counts.get("tensor API", 0), "pb_utils": counts.get("pb_utils", 0),
            "h2d": counts.get("h2d async", 0) + counts.get("h2d blocking", 0),
            "d2h": counts.get("d2h async", 0) + counts.get("d2h blocking", 0),
            "syncs": counts.get("sync", 0) + counts.get("syncs by reading", 0),
            "leaked": max(c.get("leaked", 0) for c in cost["counts"]), "server": mine["server"],
        })  # fmt: skip
    return points


GOALS = {1: 1.2, 8: 1.0, 32: 1.0}  # generated/NV instructions, at most, by requests per execute (issue 57, item 4)


def method_lines(result: dict[str, Any]) -> list[str]:
    """How the figures were made, for docs/benchmarks.md (the module docstring says it at length)."""
    calibration = ", ".join(f"{kind} {value:,.0f}" for kind, value in result["calibration"].items())
    return [
        "Each model runs in one process on a `KIND_GPU` instance of the emulated GPU (`repogen.testing.emulated_gpu`),",
        "python_backend played by `repogen.local`'s shim; a point is one `execute` of N requests of one row each, its",
        "readers network clients. *instructions*: callgrind's count of that `execute` with the emulated device's work",
        "and python_backend's calls left out (client requests switch counting off inside each; for a torch method",
        "that torch's C++ hands to the tensor subclass, `--toggle-collect` of torch's dispatch), less what the way",
        "into each left-out call costs, measured in the same run on calls that do nothing and subtracted per call",
        f"(instructions: {calibration}), and less the bulk copies of the payload (memcpy, shown apart: NVIDIA's idiom",
        "has the CUDA driver make the same copy, out of the count). What a left-out call costs on a real GPU is not",
        "counted: *tensor API* says how many each model makes. bench/gpu.py measures the same models on a GPU.",
    ]


def goal_lines(result: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    """Each point's goals: generated/NV instructions, and tensor-API calls against main's code."""
    points = {(p["workload"], p["requests"], p["role"]): p for p in result["points"]}
    old = {(p["workload"], p["requests"], p["role"]): p for p in (before or {}).get("points", [])}
    lines = ["| point | generated / NV instructions | goal | met | tensor-API calls, main's code -> now |",
             "|---|---|---|---|---|"]  # fmt: skip
    for (workload, requests, role), point in points.items():
        nv = points.get((workload, requests, "NV"))
        if role != "generated" or nv is None:
            continue
        ratio = point["instructions"] / nv["instructions"]
        goal = GOALS.get(requests)
        met = "" if goal is None else "yes" if ratio <= goal else "**no**"
        was = old.get((workload, requests, role))
        calls = f"{was['tensor_api']} -> {point['tensor_api']}" if was else f"{point['tensor_api']}"
        lines.append(f"| {workload}, {requests} requests | {ratio:.2f} | <= {goal} | {met} | {calls} |")
    return lines


def table(result: dict[str, Any]) -> str:
    """Each point's figures, and the generated model's ratios to its twins, as Markdown."""
    lines = [
        "| workload | requests | model | instructions | ratio to NV | bulk copies (not counted) | tensor API | "
        "pb_utils | Python calls | copies in / out, waits | server fetches, its copies |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_point = {(p["workload"], p["requests"], p["role"]): p for p in result["points"]}
    for p in result["points"]:
        nv = by_point.get((p["workload"], p["requests"], "NV"))
        ratio = f"{p['instructions'] / nv['instructions']:.2f}" if nv else ""
        server = p["server"]
        fetched = f"{server.get('LoadGPUBuffers', 0)}, {server.get('blocking d2h copies', 0)}"
        lines.append(
            f"| {p['workload']} | {p['requests']} | {p['model']} ({p['role']}) | {p['instructions']:,} | {ratio} | "
            f"{p['memcpy']:,} | {p['tensor_api']} | {p['pb_utils']} | {p['python_calls']} | "
            f"{p['h2d']} / {p['d2h']}, {p['syncs']} | {fetched} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, help="the result as JSON")
    parser.add_argument("--requests", type=int, nargs="+", default=list(REQUESTS), help="requests per execute")
    parser.add_argument("--executes", type=int, default=3, help="counted executes per point (their median)")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--keep", type=Path, help="a folder to keep callgrind's dumps in")
    parser.add_argument("--table-of", type=Path, help="print this result's table and stop")
    parser.add_argument("--child", choices=("count", "callgrind"), help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    requests = tuple(args.requests)
    if args.child:
        child(args.repo, args.child, requests, args.executes, tuple(args.workloads))
        return 0
    if args.table_of:
        print(table(json.loads(args.table_of.read_text())))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind (callgrind) is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="repogen-gpu-work-") as tmp:
        repo = build(Path(tmp) / "repo")
        options = ["--requests", *map(str, requests), "--executes", str(args.executes), "--workloads", *args.workloads]
        extension = build_requests(Path(tmp))
        calls = counted(repo, options, extension)
        costs, calibration = instructions(repo, options, args.executes, Path(tmp), extension)
        if args.keep is not None:
            shutil.copytree(Path(tmp) / "dumps", args.keep, dirs_exist_ok=True)
    import torch

    points = combine(calls, costs, calibration)
    leaked = [p for p in points if p["leaked"]]
    if leaked:
        raise SystemExit(f"calls nested in the emulator's own went through torch's dispatch (counted): {leaked}")
    result = {
        "python": sys.version.split()[0], "torch": torch.__version__, "executes": args.executes,
        "method": "callgrind, the emulated device's work and pb_utils' left out (bench/gpu_work.py)",
        "calibration": calibration, "points": points,
    }  # fmt: skip
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
