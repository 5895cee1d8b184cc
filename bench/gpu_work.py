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
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
APP = BENCH / "apps" / "gpu_app.py"
TWINS = BENCH / "handwritten"
# workload -> (input name, a request's row shape, generated model, NVIDIA's idiom, best practice)
WORKLOADS = {
    "linear-256": ("x", (256,), "GpuTorch", "GpuTorchNV", "GpuTorchBP"),
    "image-3x224x224": ("image", (3, 224, 224), "GpuImage", "GpuImageNV", "GpuImageBP"),
}
ROLES = ("generated", "NV", "BP")
REQUESTS = (1, 8, 32)
WARMUPS = 5
# python_backend's API the models call, left out of the count as the device is (the real stub's are C++)
SHIM_CLASSES = {
    "Tensor": ("__init__", "from_dlpack", "name", "as_numpy", "is_cpu", "to_dlpack", "__dlpack__", "__dlpack_device__"),
    "InferenceRequest": (
        "inputs",
        "parameters",
        "get_response_sender",
        "is_cancelled",
        "request_id",
        "requested_output_names",
    ),
    "InferenceResponse": ("__init__", "output_tensors", "has_error", "error"),
    "TritonError": ("__init__",),
}
SHIM_FUNCTIONS = ("get_input_tensor_by_name",)
# torch's C++ hands a call on a tensor subclass to __torch_function__ here: the overload that the other one (taking a
# TorchFunctionName) jumps to, which callgrind sees as leaving that one
TORCH_DISPATCH = "*handle_torch_function_no_python_arg_parser*OperatorHandle*"
CALIBRATION_CALLS = 200
CPP_KINDS = ("C++ getter", "C++ method")


# -- the process that runs the models (--child) --------------------------------------------------------------------


def _load(path: Path, name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(config: dict[str, Any], name: str, directory: Path) -> dict[str, str]:
    return {
        "model_config": json.dumps(config | {"name": name}), "model_name": name, "model_version": "1",
        "model_repository": str(directory), "model_instance_name": f"{name}_0_0", "model_instance_kind": "GPU",
        "model_instance_device_id": "0",
    }  # fmt: skip


def _models(repo: Path, generated: str, twins: tuple[str, str]) -> dict[str, tuple[str, Any]]:
    """The generated model and its two twins, each initialized for a KIND_GPU instance on device 0."""
    from google.protobuf import json_format, text_format

    from repogen.triton.proto import model_config_pb2

    proto = text_format.Parse((repo / generated / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    config = json.loads(json_format.MessageToJson(proto, preserving_proto_field_name=True))
    found = {}
    for role, name, path in (("generated", generated, repo / generated), *(
            (role, twin, TWINS / twin) for role, twin in zip(ROLES[1:], twins, strict=True))):  # fmt: skip
        model = _load(path / "1" / "model.py", f"gpu_work_{name}").TritonPythonModel()
        model.initialize(_args(config, name, path))
        found[role] = (name, model)
    return found


def _gates(gpu: Any) -> None:
    """python_backend's API (the shim's methods) and the torch functions the emulator wraps, each behind a gate of
    C (``_callgrind.Gate``): under callgrind nothing of it is counted but a few hundred instructions of C on the way
    in and out, where the emulator's own wrappers cost thousands of Python; each call still counted, as ``pb_utils``
    or ``tensor API``. Outside valgrind the gates only count."""
    import torch
    from _callgrind import Gate

    from repogen.local import backend_shim
    from repogen.testing.emulated_gpu import install
    from repogen.testing.emulated_gpu.device import Event

    def gated(work: Any, what: str) -> Any:
        return Gate(work, gpu.busy, lambda: gpu.tally(what))

    for class_name, methods in SHIM_CLASSES.items():
        owner = getattr(backend_shim, class_name)
        for method in methods:
            found = owner.__dict__[method]
            if isinstance(found, classmethod):
                setattr(owner, method, classmethod(gated(found.__func__, "pb_utils")))
            else:
                setattr(owner, method, gated(found, "pb_utils"))
    for function in SHIM_FUNCTIONS:
        setattr(backend_shim, function, gated(getattr(backend_shim, function), "pb_utils"))
    for owner in (torch, torch.Tensor, torch.cuda, torch.utils.dlpack, Event, install.CudaStream, install._Context):
        for name, found in list(vars(owner).items()):
            function = found.fget if isinstance(found, property) else found
            work = vars(function).get("_emulated_api") if isinstance(function, types.FunctionType) else None
            if work is not None:
                made = gated(work, "tensor API")
                setattr(owner, name, property(made) if isinstance(found, property) else made)


def _requests(pb: Any, name: str, arrays: list[Any]) -> list[Any]:
    return [pb.InferenceRequest([pb.Tensor(name, array)]) for array in arrays]


def child(repo: Path, mode: str, requests: tuple[int, ...], executes: int, workloads: tuple[str, ...]) -> None:
    """Every point, one JSON line each on stdout (and the calibration's first, under callgrind); under callgrind
    (``mode`` "callgrind") one dump per counted ``execute``, labelled with the point and its number."""
    import numpy as np

    from repogen.local import backend_shim as pb

    pb.install()
    from repogen.runtime import triton_model
    from repogen.testing.emulated_gpu import emulated

    triton_model.CANCEL_CHECK_AFTER_S = 3600.0  # no request asked whether it was cancelled (module docstring)
    with emulated() as gpu:
        _gates(gpu)
        points = []
        for workload in workloads:
            name, shape, generated, nv, bp = WORKLOADS[workload]
            models = _models(repo, generated, (nv, bp))
            rng = np.random.default_rng(0)
            for count in requests:
                arrays = [rng.standard_normal((1, *shape), dtype=np.float32) for _ in range(count)]
                points += [(workload, role, made, model, name, arrays) for role, (made, model) in models.items()]
        for *_, model, name, arrays in points:  # warm: the interpreter's specializations settle
            for _ in range(WARMUPS):
                pb.deliver(model.execute(_requests(pb, name, arrays)))
        counter = _Counter(gpu) if mode == "callgrind" else None
        if counter is not None:
            counter.calibrate()
        left_out = _left_out_files()
        for workload, role, made, model, name, arrays in points:
            for _ in range(2):  # once more, twice under callgrind: instrumented and gated, as counted (not kept)
                requests_ = _requests(pb, name, arrays)
                pb.deliver(
                    model.execute(requests_) if counter is None else counter.count("warm-up", model.execute, requests_)
                )
            counts, calls = [], []
            for n in range(executes):
                requests_ = _requests(pb, name, arrays)
                gpu.counts.clear()
                if counter is None:
                    calls.append(_python_calls(gpu, left_out, model.execute, requests_))
                    counts.append(dict(gpu.counts))
                else:
                    responses = counter.count(f"{workload} {role} {len(arrays)} #{n}", model.execute, requests_)
                    counts.append(dict(gpu.counts))
                    pb.deliver(responses)
            line = {
                "workload": workload, "role": role, "model": made, "requests": len(arrays), "counts": counts,
                "python_calls": calls, "server": _served(pb, model, made, name, arrays),
            }  # fmt: skip
            print(json.dumps(line), flush=True)


class _Counter:
    """Callgrind switched by client requests (module docstring): the emulator's gate is ``_callgrind.gated``."""

    def __init__(self, gpu: Any):
        import _callgrind  # built by build_requests(), on the path this process was given

        self.gpu = gpu
        self.cg = _callgrind
        if not _callgrind.running():
            raise SystemExit("--child callgrind runs under valgrind --tool=callgrind (bench/gpu_work.py starts it)")
        _callgrind.instrument()

    def count(self, label: str, run: Any, *args: Any) -> Any:
        """``run(*args)`` counted into one dump named ``label`` (what ran before it, zeroed: torch's dispatch toggles
        counting also where it is off, in pairs), Python's cyclic garbage collector held off meanwhile (it runs when
        allocations add up, in one execute or another: counts that repeat need it out)."""
        cg, gpu = self.cg, self.gpu
        gc.collect()
        gc.disable()
        gpu.gate = cg.gated
        cg.zero()
        cg.toggle()
        try:
            return run(*args)
        finally:
            cg.toggle()
            gpu.gate = None
            cg.dump(label)
            gc.enable()

    def calibrate(self) -> None:
        """Per call, the instructions on the way into a left-out call that does nothing, as the calls counted take
        it: through a gate (a torch function the emulator answers: ``to``, ``torch.cuda``'s), a method of the shim's,
        and torch's own Python ``handle_torch_function`` (``len`` of an emulated tensor, less that of a plain one).
        The dumps' labels say which; the parent subtracts them."""
        import numpy as np
        import torch
        from _callgrind import Gate

        from repogen.local import backend_shim as pb

        noop = Gate(lambda *args, **kwargs: None, self.gpu.busy, lambda: None)
        tensor = pb.Tensor("x", np.zeros(2, np.float32))
        emulated, plain = torch.ones(2, 2, device="cuda:0"), torch.ones(2, 2)
        k = CALIBRATION_CALLS
        cases = {"loop": lambda: [None for _ in range(k)], "wrapper": lambda: [noop(k, k, flag=True) for _ in range(k)],
                 "pb_utils": lambda: [tensor.name() for _ in range(k)],
                 "handler emulated": lambda: [len(emulated) for _ in range(k)],
                 "handler plain": lambda: [len(plain) for _ in range(k)],
                 "getter emulated": lambda: [emulated.dtype for _ in range(k)],
                 "getter plain": lambda: [plain.dtype for _ in range(k)],
                 "method emulated": lambda: [emulated.dim() for _ in range(k)],
                 "method plain": lambda: [plain.dim() for _ in range(k)]}  # fmt: skip
        for name, run in cases.items():
            run()
            self.count(f"calibration {name}", run)


def _served(pb: Any, model: Any, made: str, name: str, arrays: list[Any]) -> dict[str, int]:
    """What the server does after one more ``execute`` of the same requests: LoadGPUBuffers, its copies."""
    pb.COUNTS.clear()
    for response in pb.deliver(model.execute(_requests(pb, name, arrays))):
        if response.has_error():
            raise SystemExit(f"{made}: {response.error().message()}")
    return dict(pb.COUNTS)


def _left_out_files() -> frozenset[str]:
    import torch.overrides

    import repogen.testing.emulated_gpu as emulator
    from repogen.local import backend_shim

    files = {str(path) for folder in emulator.__path__ for path in Path(folder).glob("*.py")}
    return frozenset(files | {backend_shim.__file__, __file__, torch.overrides.__file__})


def _python_calls(gpu: Any, left_out: frozenset[str], run: Any, *args: Any) -> int:
    """Python functions entered while ``run(*args)`` runs, but the emulator's and the shim's (and all under them)."""
    calls = 0
    inside = gpu.inside

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename not in left_out and not inside():
            calls += 1

    sys.setprofile(profile)
    try:
        run(*args)
    finally:
        sys.setprofile(None)
    return calls


# -- the bench: build, count, tabulate ---------------------------------------------------------------------------


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
