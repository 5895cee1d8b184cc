"""What the runtime takes from Triton's and CPython's internals, checked when a model loads.

None of these is an interface anyone promised: the backend stub's command line (where the server's pid
is, for ``PyTritonUnrecoverableError``), the requests' ``is_cancelled`` (the barrier ``runtime.streams``
releases BLS streams behind, checked there), the custom metrics API (``runtime.metrics``, which reports its own
problem), and how CPython compiles a file into code objects (``runtime.portable`` finds a function's
code by name and line). Each check below takes what it inspects, so a test can hand it another layout,
and returns the one warning to log where the assumption does not hold: what the model cannot do there,
and what still works. None where it holds.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

from .context import TritonContext
from .contract import STUB_NAME, Stub, parse
from .payload import config_drift
from .portable import code_index
from .stub import shm_report

# What the stub's command line is on python_backend r23.10 to r26.x (stub_launcher.cc).
STUB_LAYOUT = f"{STUB_NAME} <model.py> <shm region> <bytes> <growth bytes> <server pid> ..."
CANNOT_STOP = "PyTritonUnrecoverableError will fail its requests but cannot stop tritonserver on this release"

# A file whose code objects runtime.portable must find, as (name, first line) in pre-order.
_PROBE = """\
def outer(a):
    def inner():
        return a
    return inner


class Probe:
    def method(self):
        return [x for x in (1,)]


late = lambda: 0
"""
_PROBE_CODE = [("outer", 1), ("inner", 2), ("Probe", 7), ("method", 8), ("<lambda>", 12)]


def stub_problem(argv: list[str] | None, alive: Callable[[Stub], bool] = Stub.server_alive) -> str | None:
    """The stub's command line gives the running tritonserver's pid, as ``runtime.stub`` reads it."""
    if argv is None:
        return f"{CANNOT_STOP}: this process's command line cannot be read (no /proc?), so the server's pid is unknown"
    stub = parse(argv)
    if stub is None:
        found = " ".join([os.path.basename(argv[0]), *argv[1:6]])[:240]
        return (
            f"{CANNOT_STOP}: the backend stub's command line is not `{STUB_LAYOUT}` (found `{found}`), so the "
            "server's pid is unknown, and the shared-memory report is left out; everything else serves as usual"
        )
    if not alive(stub):
        return (
            f"{CANNOT_STOP}: the pid the backend stub's command line names ({stub.server_pid}) is not a running "
            "tritonserver; everything else serves as usual"
        )
    return None


def code_layout_problem(compile_source: Callable[..., Any] = compile) -> str | None:
    """This Python compiles a file into the code objects ``runtime.portable`` expects: pre-order, named, lined."""
    try:
        module = compile_source(_PROBE, "<repogen probe>", "exec", dont_inherit=True)
        found = [key for key, codes in code_index(module).items() for _ in codes]
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        found = [(f"{type(exc).__name__}: {exc}", 0)]
    if found == _PROBE_CODE and _closures_rebuild():
        return None
    serving = "{}.{}".format(*sys.version_info[:2])
    return (
        f"this Python {serving} compiles a file into other code objects than repogen rebuilds portable payloads "
        f"from (a probe gave {found[:6]}, expected {_PROBE_CODE}): a payload that loads serves as usual, one that "
        "does not names the function it could not find. Building with --pin-python on this Python ships its "
        "bytecode instead"
    )


def load_problems(pb_utils: Any, argv: list[str] | None, streams: bool) -> list[str]:
    """Every assumption that does not hold where this model loads (``streams``: its payload drains BLS streams)."""
    found = [stub_problem(argv), code_layout_problem()]
    if streams:  # runtime/streams.py, carried where the payload drains BLS streams, checks its own barrier
        from .streams import stream_barrier_problem

        found.append(stream_barrier_problem(pb_utils))
    return [problem for problem in found if problem is not None]


def report_load(
    pb_utils: Any, log: Callable[[str, str], None], args: dict[str, str], version_dir: str, argv: list[str] | None,
    stub: Stub | None, streams: bool, failures: Any,
) -> str | None:  # fmt: skip
    """What a loading instance logs about where it runs: every assumption that does not hold (what still works),
    an edited config.pbtxt (once per model: its first instance), its shm region; why it cannot stop its server, if
    it cannot (``PyTritonUnrecoverableError``)."""
    model = args["model_name"]
    problems = [*load_problems(pb_utils, argv, streams), failures.problem]
    for problem in filter(None, problems):  # what this release moved, and what still works
        log("log_warn", f"model '{model}': {problem}")
    drift = config_drift(version_dir, model) if TritonContext.from_args(args).instance_index == 0 else None
    if drift:
        log("log_warn", drift)
    if stub is not None:
        line, low = shm_report(model, args.get("model_instance_name", ""), stub)
        log("log_warn" if low else "log_info", line)
    return next((p for p in problems if p and p.startswith(CANNOT_STOP)), None)


def _closures_rebuild() -> bool:
    """A function can be made from bare code with fresh cells, as ``portable.make_function`` does."""
    try:
        code = compile("def f():\n    x = 1\n    def g():\n        return x\n    return g\n", "<probe>", "exec")
        inner = next(c for c in next(c for c in code.co_consts if type(c) is types.CodeType).co_consts
                     if type(c) is types.CodeType)  # fmt: skip
        function = types.FunctionType(inner, {}, None, None, tuple(types.CellType() for _ in inner.co_freevars))
        function.__closure__[0].cell_contents = 41  # type: ignore[index]
        return bool(function() == 41)
    except Exception:  # noqa: BLE001 - any failure is the finding
        return False
