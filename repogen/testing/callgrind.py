"""Instructions the backend stub executes per request, counted by callgrind: repeatable on a noisy machine.

Seconds on 2 shared cores move by ±30 % between runs; instruction counts do not. The stub of each
model runs under ``valgrind --tool=callgrind`` (a backend directory whose stub is a script that
execs valgrind around the real one); after a warm-up the counters are zeroed, N requests are sent
one at a time, and the counters are dumped: instructions / N is what one request costs in the
stub process (the C++ IPC handling plus the model's Python), with nothing else of the machine in it.
A case may send its requests in groups of ``batch`` at once instead, to a model whose batcher holds
them until that many wait: every ``execute`` then gets exactly ``batch`` requests.

Of that total, the stub's shared-memory allocator and its two threads' hand-overs move by a few per cent
from one stub process to the next (the same model counted 175,425 and 181,985 in two servers, 2026-11-29);
the call of the model's ``execute`` (what the stub's ``ProcessRequests`` spends in it, the model's Python and
the ``pb_utils`` calls it makes) moves by under 1 %. :class:`Count` keeps both: a model against another is
compared on ``execute``, the stub's whole cost is reported beside it. Used by ``make bench`` (bench/run.py)
and by make test's floor check (tests/integration/test_instruction_floor.py).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import np_to_triton_dtype

from repogen.server import TritonServer
from repogen.server.provision.install import ServerInstall, VenvInfo
from repogen.server.running.process import http_client
from repogen.testing.client import infer, stream

WARMUP = 20
# In `callgrind_annotate --tree=calling` output: the stub's request handler, and under it the call of execute.
_PROCESS = "triton::backend::python::Stub::ProcessRequests("
_EXECUTE_CALL = "pybind11::detail::simple_collector"
# A counted model named <generated model>Quiet: the same files, but a vendored runtime that asks no request whether
# it was cancelled (quiet_copy).
QUIET = "Quiet"


@dataclass(frozen=True)
class Count:
    """Instructions per request: the stub's in all, and its call of the model's ``execute`` alone."""

    total: float
    execute: float


def renamed_config(text: str, old: str, new: str) -> str:
    """``name: "Double"`` and instance-group names ``"Double_0"`` become ``new``'s."""
    return re.sub(rf'"{re.escape(old)}(_\d+)?"', lambda m: f'"{new}{m.group(1) or ""}"', text)


class _CallgrindServer(TritonServer):
    """A TritonServer whose Python backend stubs run under callgrind."""

    def __init__(self, *args: Any, backend_dir: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backend_dir = backend_dir

    def command(self) -> list[str]:
        command = [c for c in super().command() if not c.startswith("--backend-directory=")]
        # valgrind slows the stub ~50x: give it time to start, and start one stub at a time (load_one_by_one)
        return [
            *command,
            f"--backend-directory={self._backend_dir}",
            "--backend-config=python,stub-timeout-seconds=900",
            "--model-control-mode=explicit",
        ]

    def load_one_by_one(self, names: list[str], timeout: float = 900.0) -> None:
        """Load ``names`` in order, each once the one before is READY.

        A dozen stubs starting together under valgrind on two cores hold the shm mutex they share with
        the server past boost.interprocess's lock timeout: tritonserver dies of ``lock_exception``, or a
        stub segfaults reading a region the server already gave up on. Loading one at a time still
        failed so without ``--fair-sched`` (see ``_backend_dir``); with both, it completes.
        """
        with http_client(self.http_url, timeout) as client:
            for name in names:
                client.load_model(name)


# The thresholds of the cancellation checks that quiet_copy raises, by file of the vendored runtime.
_QUIETED = {
    "triton_model.py": ("CANCEL_CHECK_AFTER_S",),
    "stream_cancellation.py": ("SLOW_STEP_S", "STREAM_POLL_S"),
    "concurrency.py": ("CANCEL_CHECK_AFTER_S", "CANCEL_POLL_S"),
}


def quiet_copy(repository: Path, name: str, target: Path) -> None:
    """Generated model ``name`` of ``repository`` as ``target`` (named ``<name>Quiet``), its runtime never asking
    ``is_cancelled()`` (the cancellation checks' thresholds raised to an hour).

    The runtime asks each request of an ``execute`` when the execute before it started at least
    ``CANCEL_CHECK_AFTER_S`` (10 ms) earlier, and a stream after a step of ``SLOW_STEP_S`` (1 ms) or once its
    generator has worked ``STREAM_POLL_S`` (5 ms). Under valgrind every ``execute`` takes longer than 10 ms and a
    stream's steps add up ~50 times faster, so they ask: a round trip to the server in both stub threads, whose
    shm messages also leave the stub's allocator slower for every later send, and which at native speed and
    these request rates never happens and which the hand-written models do not do. The copy counts the same
    path without it. Only the copy's runtime files are changed (written anew: the others are hard links to the
    built ones).
    """
    shutil.copytree(repository / name, target, copy_function=os.link)
    config = target / "config.pbtxt"
    text = config.read_text()
    config.unlink()
    config.write_text(renamed_config(text, name, target.name))
    for file, names in _QUIETED.items():
        for runtime in target.glob(f"*/repogen/runtime/{file}"):
            text = runtime.read_text()
            for constant in names:
                text, found = re.subn(rf"^{constant} = [0-9.]+", f"{constant} = 3600.0", text, flags=re.MULTILINE)
                if found != 1:
                    raise RuntimeError(f"{runtime}: no `{constant} = <seconds>` to raise; update {__file__}'s _QUIETED")
            runtime.unlink()
            runtime.write_text(text)


def _backend_dir(install: ServerInstall, python: str, out_dir: Path) -> Path:
    """A backend directory beside the real ones (same depth: the RPATHs resolve) with a valgrind stub; one per
    process: the cache is shared, and another run's rebuilding a common one left this run's stubs without their
    files ("No module named 'triton_python_backend_utils'" when a model loads)."""
    real = install.backend_directory(python) / "python"
    backend = install.tritonserver_dir / f"backends-callgrind-{os.getpid()}"
    shutil.rmtree(backend, ignore_errors=True)
    (backend / "python").mkdir(parents=True)
    for item in real.iterdir():
        if item.name != "triton_python_backend_stub":
            os.link(item, backend / "python" / item.name)
    stub = backend / "python" / "triton_python_backend_stub"
    # --fair-sched: the stub hands the shm mutex between its threads and the server; valgrind runs one
    # thread at a time, and without a fair hand-over a waiting thread can starve past the lock timeout.
    valgrind = f"valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file={out_dir}/%p.out"
    stub.write_text(f'#!/bin/sh\nexec {valgrind} "{real}/triton_python_backend_stub" "$@"\n')
    stub.chmod(0o755)
    return backend


def _new_dump(out_dir: Path, pid: int, before: set[Path], timeout: float = 30.0) -> Path:
    """The dump file ``callgrind_control -d`` asked for, once valgrind has written it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = set(out_dir.glob(f"{pid}.out.*")) - before
        if fresh:
            time.sleep(0.5)  # let valgrind finish writing it
            return fresh.pop()
        time.sleep(0.2)
    raise RuntimeError(f"callgrind wrote no dump for pid {pid} into {out_dir} within {timeout:.0f} s")


def _stub_pid(server: TritonServer, model: str) -> int:
    return next(
        p for p in server.process_group_pids() if f"/{model}/".encode() in Path(f"/proc/{p}/cmdline").read_bytes()
    )


def _total(dump: Path) -> int:
    for line in dump.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"{dump} has no instruction total")


def _execute_total(dump: Path) -> int:
    """What ``Stub::ProcessRequests`` spent in its call of the model's ``execute``, callees included."""
    tree = subprocess.run(
        ["callgrind_annotate", "--tree=calling", "--inclusive=yes", "--threshold=100", str(dump)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    inside = False
    for line in tree.splitlines():
        if "*  " in line:  # a function's own line: the callees of the one named follow, each with '>'
            inside = _PROCESS in line
        elif inside and ">  " in line and _EXECUTE_CALL in line:
            return int(line.split()[0].replace(",", ""))
    raise RuntimeError(f"{dump}: no call of execute under {_PROCESS}...) in callgrind_annotate's tree")


def _send(server: TritonServer, model: str, inputs: dict[str, np.ndarray], batch: int, groups: int) -> None:
    """``groups`` times: ``batch`` requests at once, then wait for every answer (one at a time when batch is 1).

    A decoupled model's request is a gRPC stream, read to its final flag.
    """
    if _decoupled(server, model):
        for _ in range(groups):
            stream(server, model, inputs, timeout=300)
        return
    if batch == 1:
        for _ in range(groups):
            infer("grpc", server, model, inputs)
        return
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        tensors = []
        for name, array in inputs.items():
            tensor = grpcclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        answers: queue.Queue[Any] = queue.Queue()
        for _ in range(groups):
            for _ in range(batch):
                client.async_infer(model, tensors, callback=lambda result, error: answers.put(error))
            for _ in range(batch):
                error = answers.get(timeout=300)  # queue.Empty: the batcher never formed the group
                if error is not None:
                    raise RuntimeError(f"{model}: {error}")
    finally:
        client.close()


def _decoupled(server: TritonServer, model: str) -> bool:
    with http_client(server.http_url, 30) as client:
        config = client.get_model_config(model)
    return bool(config.get("model_transaction_policy", {}).get("decoupled", False))


def _executions(server: TritonServer, model: str) -> tuple[int, int]:
    """(requests, executions) the server counted for ``model``: proves the batches were the size asked for."""
    with http_client(server.http_url, 30) as client:
        stats = client.get_inference_statistics(model)["model_stats"][0]
    return int(stats["inference_stats"]["success"]["count"]), int(stats["execution_count"])


def instructions_per_request(
    repository: Path,
    install: ServerInstall,
    venv: VenvInfo,
    cases: dict[str, tuple[Any, ...]],
    work: Path,
    requests: int = 200,
) -> dict[str, float]:
    """Stub instructions per request of each case, in all (:func:`counts`)."""
    return {key: count.total for key, count in counts(repository, install, venv, cases, work, requests).items()}


def _count_case(
    server: TritonServer,
    out_dir: Path,
    model: str,
    inputs: dict[str, np.ndarray],
    stubs: Any,
    batch: int,
    requests: int,
) -> Count:
    """One case on the started server: a warm-up, the counters zeroed, the requests sent, the stubs' dumps read."""
    groups = max(1, requests // batch)
    _send(server, model, inputs, batch, max(1, WARMUP // batch))
    pids = [_stub_pid(server, name) for name in stubs or (model,)]
    for pid in pids:
        subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
    before = _executions(server, model)
    _send(server, model, inputs, batch, groups)
    deadline = time.monotonic() + 60  # the server counts a request after its answer has left
    while (after := _executions(server, model))[0] - before[0] < groups * batch and time.monotonic() < deadline:
        time.sleep(0.2)
    sent, executions = after[0] - before[0], after[1] - before[1]
    if batch > 1 and (sent != groups * batch or executions != groups):
        raise RuntimeError(f"{model}: {sent} requests in {executions} executions, not {groups} of {batch}")
    total = execute = 0
    for pid in pids:
        dumps = set(out_dir.glob(f"{pid}.out.*"))
        subprocess.run(["callgrind_control", "-d", model, str(pid)], check=True, capture_output=True)
        dump = _new_dump(out_dir, pid, dumps)
        total += _total(dump)
        execute += _execute_total(dump)
    return Count(total / (groups * batch), execute / (groups * batch))


def counts(
    repository: Path,
    install: ServerInstall,
    venv: VenvInfo,
    cases: dict[str, tuple[Any, ...]],
    work: Path,
    requests: int = 200,
) -> dict[str, Count]:
    """Stub instructions per request of each case, in all and in ``execute``.

    A case is the model a request is sent to, the inputs of one request, the models whose stubs
    are counted (an ensemble's steps; the model itself when empty), summed, and optionally the
    requests each execute gets (sent together; default 1, one at a time).
    """
    out_dir = work / "callgrind"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    backend = _backend_dir(install, venv.python_version, out_dir)
    server = _CallgrindServer(repository, install, venv, backend_dir=backend, log_path=work / "callgrind.log")
    counted: dict[str, Count] = {}
    try:
        server.start()
        server.wait_ready(900)
        steps = sorted({name for _, _, stubs, *_ in cases.values() for name in stubs})
        models = sorted({model for model, *_ in cases.values()} - set(steps))
        server.load_one_by_one(steps + models)  # an ensemble after its steps
        for key, (model, inputs, stubs, *rest) in cases.items():
            counted[key] = _count_case(server, out_dir, model, inputs, stubs, rest[0] if rest else 1, requests)
    finally:
        server.stop()
        shutil.rmtree(backend, ignore_errors=True)
    return counted
