"""The process bench/gpu_work.py counts in (``--child``): the generated model and its twins served as python_backend
serves them, on the emulated GPU, each execute counted by callgrind's client requests or by ``sys.setprofile``
(bench/gpu_work.py's docstring says what is counted, and how)."""

from __future__ import annotations

import gc
import json
import sys
import types
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
TWINS = BENCH / "handwritten"
# workload -> (input name, a request's row shape, generated model, NVIDIA's idiom, best practice)
WORKLOADS = {
    "linear-256": ("x", (256,), "GpuTorch", "GpuTorchNV", "GpuTorchBP"),
    "image-3x224x224": ("image", (3, 224, 224), "GpuImage", "GpuImageNV", "GpuImageBP"),
}
ROLES = ("generated", "NV", "BP")
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
CALIBRATION_CALLS = 200
CPP_KINDS = ("C++ getter", "C++ method")


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
    return frozenset(files | {backend_shim.__file__, __file__, str(BENCH / "gpu_work.py"), torch.overrides.__file__})


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
