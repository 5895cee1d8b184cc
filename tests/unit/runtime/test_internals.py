"""What the runtime takes from Triton's internals fails loud: each check fed a layout a release could move to.

Each assumption that does not hold gives one warning naming what the model cannot do there and what still
works; the layouts of 2.39-2.51 (and of this Python) give none.
"""

from __future__ import annotations

import os
import types
from typing import Any

import pytest

from repogen.local import backend_shim
from repogen.runtime.contract import Stub, parse, read_argv
from repogen.runtime.internals import (
    CANNOT_STOP,
    code_layout_problem,
    load_problems,
    stub_problem,
)
from repogen.runtime.metrics import FailureCounter
from repogen.runtime.streams import stream_barrier_problem

# What python_backend r23.10-r26.x starts (stub_launcher.cc): the server's pid is the sixth argument.
REGION = "triton_python_backend_shm_region_9f1c2a7e-0b1d-4e5f-8a9b-0c1d2e3f4a5b"
ARGV = ["/opt/tritonserver/backends/python/triton_python_backend_stub", "/models/M/1/model.py", REGION,
        "1048576", "1048576", "4242", "/opt/tritonserver/backends/python", "336", "M_0_0", "DEFAULT"]  # fmt: skip


def _alive(stub: Stub) -> bool:
    return True


def test_the_stub_layout_of_the_releases_served_gives_no_warning() -> None:
    assert parse(ARGV) == Stub(REGION, 1048576, 1048576, 4242)
    assert stub_problem(ARGV, _alive) is None
    assert stub_problem(["/opt/bin/python_stub", *ARGV[1:]], _alive) is not None  # another binary is another layout


@pytest.mark.parametrize(
    "argv, found",
    [
        (None, "this process's command line cannot be read (no /proc?)"),
        (["/usr/bin/triton_python_backend_stub", "--model=/m/1/model.py", "--shm=M_0_0", "--pid=4242"],
         "found `triton_python_backend_stub --model=/m/1/model.py --shm=M_0_0 --pid=4242`"),
        (["/usr/bin/python_stub", "/m/1/model.py", "M_0_0", "1048576", "1048576", "4242"],
         "found `python_stub /m/1/model.py M_0_0 1048576 1048576 4242`"),
        (["/b/triton_python_backend_stub", "/m/1/model.py", "M_0_0", "1MiB", "1MiB", "4242"],
         "found `triton_python_backend_stub /m/1/model.py M_0_0 1MiB 1MiB 4242`"),
    ],
)  # fmt: skip
def test_a_stub_command_line_laid_out_otherwise_is_named(argv: list[str] | None, found: str) -> None:
    problem = stub_problem(argv, _alive)
    assert problem is not None and problem.startswith(f"{CANNOT_STOP}: ")
    assert found in problem


def test_a_pid_that_is_not_a_tritonserver_is_named() -> None:
    argv = [*ARGV[:5], str(os.getpid()), *ARGV[6:]]
    problem = stub_problem(argv)  # this pid is pytest, not a tritonserver
    assert problem == (
        f"{CANNOT_STOP}: the pid the backend stub's command line names ({os.getpid()}) is not a running tritonserver; "
        "everything else serves as usual"
    )


def test_an_unrecoverable_error_with_no_server_to_stop_is_logged_not_silent() -> None:
    backend_shim.install()  # runtime/unrecoverable.py answers through triton_python_backend_utils
    from repogen.runtime import unrecoverable

    logged: list[tuple[str, str]] = []
    unrecoverable.stop_server(None, "M", "PyTritonUnrecoverableError: gone", lambda *line: logged.append(line),
                            f"{CANNOT_STOP}: the backend stub's command line is not ...")  # fmt: skip
    assert logged == [
        ("log_error", f"model 'M': PyTritonUnrecoverableError: gone; {CANNOT_STOP}: the backend stub's command line "
                      "is not ..., so this instance answers every request with that")
    ]  # fmt: skip
    unrecoverable.stop_server(None, "M", "PyTritonUnrecoverableError: gone", lambda *line: logged.append(line), None)
    assert len(logged) == 1  # outside a server (repogen.local): nothing to say


def test_requests_without_is_cancelled_release_streams_late() -> None:
    class Request:
        def is_cancelled(self) -> bool:
            return False

    assert stream_barrier_problem(types.SimpleNamespace(InferenceRequest=Request)) is None
    problem = stream_barrier_problem(types.SimpleNamespace(InferenceRequest=object))
    assert problem == (
        "the decoupled BLS streams it drains are released 5 s after they end instead of at once (requests have no "
        "is_cancelled() on this release, the barrier runtime.streams waits behind); streaming works as usual"
    )
    assert stream_barrier_problem(types.SimpleNamespace()) is not None


def test_metrics_that_moved_are_named_by_the_counter() -> None:
    class Counted:
        def __init__(self, labels: dict[str, str]) -> None:
            self.labels = labels

        def increment(self, value: int) -> None:
            self.value = value

    class Family:
        COUNTER = "counter"
        Metric = Counted

        def __init__(self, name: str, description: str, kind: Any) -> None:
            self.name = name

    assert FailureCounter(types.SimpleNamespace(MetricFamily=Family), "M", "1").problem is None
    missing = FailureCounter(types.SimpleNamespace(), "M", "1")
    assert missing.problem == (
        "failed requests are not counted in repogen_inference_request_failure: this release's "
        "triton_python_backend_utils has no MetricFamily.COUNTER; error responses still reach the clients, and "
        "tritonserver's own statistics count what they count"
    )
    missing.add(3)  # uncounted, never a crashed request

    class Renamed(Family):
        class Metric:  # increment() renamed
            def __init__(self, labels: dict[str, str]) -> None:
                pass

            def inc(self, value: int) -> None:
                pass

    renamed = FailureCounter(types.SimpleNamespace(MetricFamily=Renamed), "M", "1")
    assert (
        renamed.problem is not None
        and "making the metric failed (AttributeError: its Metric has no increment())" in (renamed.problem)
    )

    class Disabled(Family):
        def __init__(self, name: str, description: str, kind: Any) -> None:
            raise RuntimeError("metrics are disabled")

    disabled = FailureCounter(types.SimpleNamespace(MetricFamily=Disabled), "M", "1")
    assert "making the metric failed (RuntimeError: metrics are disabled)" in (disabled.problem or "")


def test_a_python_compiling_code_objects_otherwise_is_named() -> None:
    assert code_layout_problem() is None  # this Python, as every Python 3.10-3.13

    def flattened(source: str, filename: str, mode: str, dont_inherit: bool = False) -> types.CodeType:
        """A compiler that inlines nested functions into one code object, as a future CPython might."""
        return compile("pass", filename, mode)

    problem = code_layout_problem(flattened)
    assert problem is not None
    assert "compiles a file into other code objects than repogen rebuilds portable payloads from (a probe gave []" in (
        problem
    )
    assert "a payload that loads serves as usual" in problem and "--pin-python" in problem


def test_load_problems_gathers_them() -> None:
    class Request:
        def is_cancelled(self) -> bool:
            return False

    pb_utils = types.SimpleNamespace(InferenceRequest=Request)
    problems = load_problems(pb_utils, ["/usr/bin/pytest"], streams=True)
    assert len(problems) == 1 and problems[0].startswith(CANNOT_STOP)
    assert load_problems(types.SimpleNamespace(), None, streams=False) == [stub_problem(None)]
    assert len(load_problems(types.SimpleNamespace(), None, streams=True)) == 2


def test_read_argv_reads_a_command_line(tmp_path: Any) -> None:
    cmdline = tmp_path / "cmdline"
    cmdline.write_bytes(b"\0".join(a.encode() for a in ARGV) + b"\0")
    assert read_argv(str(cmdline)) == ARGV
    assert read_argv(str(tmp_path / "missing")) is None
