"""`repogen NAME` loads one command module, and `repogen infer` over HTTP loads no compiler, protobuf or gRPC.

Timing a command is noisy on a loaded machine; which modules it imports is not, and is what made
`repogen infer` take ~0.5 s: the CLI imported every command, hence the compiler, and then `import repogen`
imported the whole DSL, numpy and the runtime's decorators for every command. The counts below are
`python -X importtime`'s, beyond what the interpreter imports by itself (`repogen --version`: under
0.15 s) and beyond numpy and the standard library's HTTP client (`repogen infer`: under 0.3 s; 0.20 s here
with the standard library's client, 0.29 s with tritonclient's, whose gevent and ml_dtypes took 0.1 s), both
on a quiet machine, median of five.
"""

from __future__ import annotations

import os
import pkgutil
import socket
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import click
from click.testing import CliRunner

from repogen import commands
from repogen.cli import cli

# Never needed to send one HTTP request and print its outputs.
FORBIDDEN = ("grpc", "google.protobuf", "cloudpickle", "tritonclient.grpc", "repogen.emit", "repogen.ir")
FORBIDDEN += ("repogen.build", "repogen.server.provision", "repogen.server.running", "repogen.triton.releases")
FORBIDDEN += ("secrets", "hmac")  # a key is sent, never made
FORBIDDEN += ("tritonclient", "gevent", "geventhttpclient", "ml_dtypes")  # HTTP goes out through http.client


def _declared() -> dict[str, str]:
    """Every command any module of repogen.commands declares in ``COMMANDS``, name -> module."""
    found = {}
    for info in pkgutil.iter_modules(commands.__path__):
        for command in getattr(import_module(f"{commands.__name__}.{info.name}"), "COMMANDS", ()):
            found[command.name] = info.name
    return found


# Modules a command may import beyond its baseline, measured 46 (--version) and 66 (infer over HTTP, beyond numpy and
# http.client) on 3.11: the CLI, click, json, tempfile and the command's own modules. At
# 55a2097 --version imported 213 more than a bare interpreter (the DSL, numpy and the decorators), the reason it
# took ~0.45 s.
VERSION_EXTRA = 50
INFER_EXTRA = 70


def _importtime(*code_and_args: str) -> set[str]:
    """The modules ``python -X importtime -c CODE ARGS...`` imports, by name (one line each on stderr)."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", *code_and_args], capture_output=True, text=True, timeout=120
    )
    lines = [line.partition("|")[2] for line in run.stderr.splitlines() if line.startswith("import time:")]
    names = {line.rpartition("|")[2].strip() for line in lines}
    return names - {"imported package"}  # the header line


def test_repogen_version_imports_the_cli_and_click_alone() -> None:
    names = _importtime("from repogen.cli import main; main()", "--version")
    extra = names - _importtime("pass")
    assert "click" in names and "repogen.cli" in names
    assert not [n for n in names if n.split(".")[0] in ("numpy", "google", "cloudpickle", "tritonclient")]
    ours = sorted(n for n in names if n.startswith("repogen."))
    assert ours == ["repogen.cli", "repogen.commands", "repogen.dsl", "repogen.dsl.runners", "repogen.errors",
                    "repogen.fixed_seed", "repogen.version"]  # fmt: skip
    assert len(extra) <= VERSION_EXTRA, sorted(extra)


def test_an_http_infer_imports_little_beyond_numpy_and_http_client() -> None:
    with socket.socket() as sock:  # a port nobody listens on: the request is built and sent, then refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = "from repogen.cli import main; main()"
    names = _importtime(code, "infer", "AddSub", "-i", "a=1", "--url", f"127.0.0.1:{port}", "--protocol", "http")
    extra = names - _importtime("import numpy, http.client")
    assert "http.client" in names and "repogen.server.client.kserve_http" in names
    declarations = ("repogen.dsl.", "repogen.runtime.", "repogen.build", "repogen.ir", "repogen.emit")
    found = [n for n in names if n.startswith(declarations)]
    # the runners; the dtype table, in the build-to-runtime contract, with the runtime's errors it raises (stdlib only)
    assert set(found) <= {"repogen.dsl.runners", "repogen.runtime.contract", "repogen.runtime.errors"}, found
    assert len(extra) <= INFER_EXTRA, sorted(extra)


def test_every_declared_command_is_listed_and_resolves() -> None:
    declared = _declared()
    assert {"build", "infer", "serve", "tune"} <= declared.keys()
    listing = CliRunner().invoke(cli, ["--help"]).output
    for name, module in declared.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name, f"{name} (repogen/commands/{module}.py)"
        assert f"\n  {name} " in listing, name
    assert cli.get_command(click.Context(cli), "params") is None  # a helper module is not a command


# sys.modules when the command exits (importtime does not list what importlib.import_module loads).
_PROBE = """
import atexit, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write("\\n".join(sorted(sys.modules))))
from repogen.cli import main
main()
"""


def _imported(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    listing = tmp_path / "modules.txt"
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env=dict(os.environ, MODULES_OUT=str(listing)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return set(listing.read_text().split()), run


def _offending(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN))


def test_a_command_named_like_its_module_loads_alone(tmp_path: Path) -> None:
    names, run = _imported(tmp_path, "infer", "--help")
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(n for n in names if n.startswith("repogen.commands.")) == ["repogen.commands.infer"]


def test_an_http_infer_imports_no_grpc_protobuf_or_compiler(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on: the request is built and sent, then refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    names, run = _imported(tmp_path, "infer", "AddSub", "-i", "a=1", "--url", f"127.0.0.1:{port}", "--protocol", "http")
    assert f"cannot reach a Triton server at 127.0.0.1:{port} over http" in run.stderr
    assert "repogen.server.client.kserve_http" in names  # the request really went out through the client
    assert _offending(names) == []
