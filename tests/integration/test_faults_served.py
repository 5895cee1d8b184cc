"""Faults, tried as a hostile user would, on the real server (docs/deployment.md, "Faults").

Every misbehaving callable gets a clear error over HTTP and gRPC and the model keeps serving; a
SIGKILLed stub is restarted by 2.39/2.41 and never by 2.51 (whose probes stay green); rebuilding a
served repository under load fails no request; ``PyTritonUnrecoverableError`` stops the whole
server; a full, read-only or foreign file system fails a build with one line and the previous
repository intact; too little shared memory is named with the model and the setting to raise.

``REPOGEN_FAULT_TABLE=PATH`` writes the table fault -> sent / failed / lost -> what the client saw.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from faults_load import Load, record, shm_server, tmpfs

from repogen.ondisk.validate import validate_repository
from repogen.testing.client import PROTOCOLS, InferenceServerException, infer
from repogen.testing.server_under_test import release_at_least

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

ROOT = Path(__file__).resolve().parents[2]
APP = "tests/apps/faults/app.py"
FAST_EXIT = ("--exit-timeout-secs=5",)  # a dead stub (2.51) holds the shutdown for the whole timeout
X = np.array([[1.0, 2.0]], dtype=np.float32)


def _at(needle: str, function: str) -> str:
    """Where the app raises: the location a callable's error names (its innermost frame in the user's source)."""
    lines = (ROOT / APP).read_text().splitlines()
    (number,) = [i for i, line in enumerate(lines, 1) if needle in line]
    return f"(at app.py:{number}, in {function})"


def _message(call) -> str:
    with pytest.raises(InferenceServerException) as info:
        call()
    return str(info.value.message())


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faults") / "repo"
    cli_build(f"{APP}:models", out)
    return out


@pytest.fixture(scope="module")
def server(serve, repo):
    config = repo / "Rows" / "config.pbtxt"
    config.write_text(config.read_text() + "# edited by hand after the build\n")
    return serve(repo, extra_args=FAST_EXIT)


# -- misbehaving callables -------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_batch_with_a_row_too_many_fails_naming_the_output_and_the_counts(server, protocol):
    for rows in (1, 3):
        x = np.ones((rows, 2), np.float32)
        text = _message(lambda: infer(protocol, server, "Rows", {"x": x}))  # noqa: B023
        assert text == (
            f"InferenceError: @batch: model 'Rows' output 'y' has {rows + 1} rows, expected {rows} (one per input "
            f"row: the requests' batch sizes [{rows}] concatenated); return exactly one output row per input row"
        )
    record(f"@batch returns a row too many ({protocol})", 2, 2, 0, "InferenceError naming model, output, 2 vs 1 rows")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    ("code", "expected", "raised"),
    [
        (1, "SystemExit: 3", "raise SystemExit(3)"),
        (2, "KeyboardInterrupt: stop", 'raise KeyboardInterrupt("stop")'),
        (3, "GeneratorExit: closed", 'raise GeneratorExit("closed")'),
    ],
)
def test_system_exit_and_friends_are_that_request_s_error(server, protocol, code, expected, raised):
    x = np.full((1, 2), code, np.float32)
    text = _message(lambda: infer(protocol, server, "Exits", {"x": x}))
    assert text == f"{expected} {_at(raised, 'exits')}"  # one line: no traceback, no absolute path
    calm = np.full((1, 2), 5.0, np.float32)
    np.testing.assert_array_equal(infer(protocol, server, "Exits", {"x": calm})["y"], calm)  # and it keeps serving
    saw = f'"{text}", then the next request answers'
    record(f"callable raises {expected.split(':')[0]} ({protocol})", 2, 1, 0, saw)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_string_for_a_float_output_names_model_output_dtype_and_value(server, protocol):
    text = _message(lambda: infer(protocol, server, "Text", {"x": X}))
    assert text.startswith(
        "InferenceError: model 'Text' output 'y' is declared FP32 (float32), but the callable returned an array "
        "of dtype <U3 and shape [1, 2] (['abc' 'abc']), which cannot be converted to it (ValueError: could not "
        "convert string to float: 'abc')"
    ), text
    record(f"a string returned for an FP32 output ({protocol})", 1, 1, 0, "InferenceError: model, output, FP32, value")


def test_an_edited_config_is_served_and_logged_once_with_the_manifest_hash(server, repo):
    config = repo / "Rows" / "config.pbtxt"
    manifest = repo / "repogen.manifest.json"
    found = hashlib.sha256(config.read_bytes()).hexdigest()
    lines = [line for line in server.log_text().splitlines() if "is not the file `repogen build` wrote" in line]
    assert len(lines) == 1, lines
    assert (
        f"model 'Rows': {config} is not the file `repogen build` wrote: its sha256 is {found}, {manifest} lists "
        in (lines[0])
    )
    assert server.model_ready("Rows")


# -- a stub killed under load ------------------------------------------------------------------------


def _status(server, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://{server.http_url}{path}", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _hung(messages: Iterable[str]) -> list[str]:
    """The requests a live server took and never answered (the client's timeout), unlike those a dead server
    refused or dropped with its connection: a crash must leave none of these."""
    return [m for m in messages if any(word in m.lower() for word in ("deadline exceeded", "timed out", "timeout"))]


def test_sigkilled_stub_under_load(server):
    """2.39/2.41 restart the stub (2.41 then often crashes whole); 2.51 never restarts it, while every probe says 200.

    Either of 2.41 and 2.51 may instead abort with ``boost::interprocess::lock_exception`` thrown out of
    ``TRITONBACKEND_ModelInstanceExecute`` (2.51: in one CI full-suite run, in 0 of 30 trials here;
    docs/deployment.md, "Faults"): then the server is gone and every later request is refused.
    """
    before = int(infer("grpc", server, "Victim", {"x": X})["pid"][0, 0])
    with Load(server, "Victim", check=lambda x, y: np.array_equal(y, x * 2)) as load:
        time.sleep(1.0)
        os.kill(before, signal.SIGKILL)
        load.mark()
        time.sleep(4.0)
    tally, release = load.tally, server.install.release.tritonserver
    assert tally.wrong == 0 and tally.ok_before_mark > 0 and tally.failed_before_mark == 0, tally
    crashed = not server.is_running()
    if release_at_least("2.51.0"):
        assert "it will be restarted" not in server.log_text(), server.log_tail()  # 2.51 never restarts a stub
    if release_at_least("2.51.0") and not crashed:
        assert tally.lost == 0 and tally.failed_last and tally.ok_after_mark <= 3, tally  # answers already on their way
        assert set(tally.messages) == {"Stub process 'Victim_0_0' is not healthy."}, tally.messages
        probes = [_status(server, p) for p in ("/v2/health/live", "/v2/health/ready", "/v2/models/Victim/ready")]
        assert probes == [200, 200, 200]
        saw = "\"Stub process 'Victim_0_0' is not healthy.\" forever; live/ready probes 200"
    elif crashed:  # 2.41 in about half the trials, after the restart; 2.51 rarely, without one
        log = server.log_text()
        if release_at_least("2.51.0"):  # only the abort was ever seen there; and it loses nothing it took
            assert "boost::interprocess::lock_exception" in log, server.log_tail()
            assert _hung(tally.messages) == [], tally.messages
        else:
            signatures = ("Signal (11) received.", "boost::interprocess::lock_exception")  # a segfault, or an abort
            assert any(signature in log for signature in signatures), server.log_tail()
        assert tally.failed <= 6 and not tally.answered_last, tally  # every later request finds no server
        how = "stub restarted, then " if not release_at_least("2.51.0") else ""
        saw = f"{how}tritonserver crashed (SIGSEGV or lock_exception): connection refused"
    else:
        assert tally.lost == 0 and 0 < tally.failed <= 6, tally  # the requests in flight at the kill (3 clients)
        assert all("is not healthy" in m for m in tally.messages), tally.messages
        assert tally.answered_last, tally  # the restarted stub answers every late request right
        assert "Stub process is unhealthy and it will be restarted." in server.log_text()
        saw = "the requests in flight fail (stub not healthy), then the restarted stub answers"
    record(f"stub SIGKILLed under load ({release})", tally.sent, tally.failed, tally.lost, saw)


# -- rebuilding a served repository under load -----------------------------------------------------


@pytest.mark.parametrize("mode", ["poll", "explicit"])
def test_rebuild_under_load_fails_no_request(mode, cli_build, triton_server, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    cli_build(f"{APP}:live", repo)
    args = (
        ("--model-control-mode=poll", "--repository-poll-secs=1")
        if mode == "poll"
        else (
            "--model-control-mode=explicit",
            "--load-model=*",
        )
    )
    server = triton_server(repo, extra_args=args)
    with Load(server, "Live", check=lambda x, y: np.allclose(y - x, 1) or np.allclose(y - x, 2)) as load:
        time.sleep(1.0)
        monkeypatch.setenv("FAULTS_GENERATION", "2")
        cli_build(f"{APP}:live", repo)
        if mode == "explicit":
            from tritonclient.http import InferenceServerClient

            InferenceServerClient(server.http_url).load_model("Live")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and infer("grpc", server, "Live", {"x": X})["y"][0, 0] != 3.0:
            time.sleep(0.2)
        time.sleep(1.0)
    tally = load.tally
    assert infer("http", server, "Live", {"x": X})["y"].tolist() == [[3.0, 4.0]]  # generation 2 serves
    assert (tally.failed, tally.lost, tally.wrong) == (0, 0, 0), tally
    record(f"rebuild into the served directory ({mode} mode)", tally.sent, 0, 0, "old answers, then new ones")


# -- PyTritonUnrecoverableError ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unrecoverable_error_answers_then_shuts_the_server_down(protocol, cli_build, triton_server, tmp_path):
    repo = tmp_path / "repo"
    cli_build(f"{APP}:doomed", repo)
    server = triton_server(repo, extra_args=FAST_EXIT)
    assert infer(protocol, server, "Bystander", {"x": X})["y"].tolist() == X.tolist()
    minus = -np.ones((2,), np.float32)
    error = f"PyTritonUnrecoverableError: weights are corrupt {_at('weights are corrupt', 'doomed_model')}"
    assert _message(lambda: infer(protocol, server, "Doomed", {"x": minus})) == error
    start = time.monotonic()
    while server.is_running() and time.monotonic() - start < 20:
        time.sleep(0.1)
    log = server.log_text()
    assert not server.is_running(), log[-3000:]
    assert server.stop() == 0  # a graceful exit: Kubernetes restarts the container, Docker with --restart=always
    assert (
        f"model 'Doomed': {error}; shutting tritonserver (pid {server.pid}) "
        "down with SIGTERM, as PyTriton does, so that its supervisor restarts it" in log
    )
    assert "Signal (15) received." in log
    assert server.process_group_pids() == []
    took = time.monotonic() - start
    record(f"PyTritonUnrecoverableError ({protocol})", 1, 1, 0, f"the error, then tritonserver exits 0 ({took:.1f} s)")


# -- the file system under a build ---------------------------------------------------------------------


def _build(output: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "repogen", "build", f"{APP}:live", "-o", str(output)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _pages_kib(directory: Path) -> int:
    """What ``directory``'s files take on a tmpfs (whole 4 KiB pages each), in KiB."""
    return sum(-(-p.stat().st_size // 4096) * 4 for p in directory.rglob("*") if p.is_file())


def test_full_read_only_and_foreign_file_systems_fail_the_build_in_one_line(tmp_path):
    assert _build(tmp_path / "probe").returncode == 0
    size = _pages_kib(tmp_path / "probe") * 3 // 2  # one build of `live` fits, a second beside it does not
    with tmpfs(tmp_path / "disk", f"{size}k") as disk:
        output = disk / "repo"
        assert _build(output).returncode == 0
        before = _snapshot(output)
        full = _build(output)
        assert full.returncode == 1 and full.stderr.count("\n") == 1, full.stderr
        assert full.stderr.startswith(f"Error: cannot write the repository {output}: {disk}/.repo.repogen-")
        assert "No space left on device (errno 28); free space there" in full.stderr
        assert full.stderr.endswith(f"The previous repository at {output} is intact.\n")
        assert _snapshot(output) == before and [p.name for p in disk.iterdir()] == ["repo"]
        assert validate_repository(output) == []
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        frozen = _build(output)
        assert "Read-only file system (errno 30); build onto a writable file system" in frozen.stderr
        assert frozen.stderr.endswith(f"The previous repository at {output} is intact.\n")
    with tmpfs(tmp_path / "mounted", "2m") as mounted:
        foreign = _build(mounted)
        assert foreign.stderr == (
            f"Error: cannot replace {mounted}: it is a mount point, another file system than its parent {tmp_path}; "
            "a build is written beside the output and renamed into place, which cannot cross file systems. Build "
            f"into a directory inside it (-o {mounted / 'models'}) and serve that one. {mounted} is unchanged.\n"
        )
    denied = tmp_path / "denied"
    denied.mkdir()
    os.chown(denied, 65534, 65534)  # nobody's; root without CAP_DAC_OVERRIDE may not write there
    caps = "-dac_override,-dac_read_search,-fowner"
    refused = _build(denied / "repo", "setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}")
    assert "Permission denied (errno 13); build as a user that may write there" in refused.stderr, refused.stderr
    record("repogen build: disk full / read-only / mount point / no permission", 4, 4, 0, "one Error: line each")


# -- shared memory -------------------------------------------------------------------------------------


def test_too_little_dev_shm_fails_the_load_naming_model_and_flag(triton_install, cli_build, tmp_path):
    repo = tmp_path / "repo"
    cli_build(f"{APP}:live", repo)
    with shm_server(triton_install, repo, "512k", tmp_path) as (server, error):
        assert error is not None and not server.is_running()
    log = server.log_text()
    assert "failed to load 'Live' version 1: Internal: Unable to initialize shared memory key" in log
    assert "to requested size (1048576 bytes). If you are running Triton inside docker, use '--shm-size'" in log
    with shm_server(triton_install, repo, None, tmp_path, "--backend-config=python,shm-default-byte-size=262144") as (
        server,
        error,
    ):
        assert error is not None
    assert "failed to load 'Live' version 1: Invalid argument: shm-default-byte-size can't be smaller than 4 MiBs" in (
        server.log_text()
    )
    record("/dev/shm 512 KiB; shm-default-byte-size 256 KiB", 0, 0, 0, "tritonserver exits 1, log names model, flag")


def test_outputs_larger_than_dev_shm_fail_and_the_log_names_the_model(triton_install, repo, tmp_path):
    with shm_server(triton_install, repo, "16m", tmp_path, *FAST_EXIT) as (server, error):
        assert error is None, error
        messages = []
        for protocol in PROTOCOLS:
            messages.append(_message(lambda: infer(protocol, server, "Big", {"n": np.array([4 << 20])})))  # noqa: B023
            assert infer(protocol, server, "Big", {"n": np.array([16])})["y"].shape == (16,)  # still serving
        log = server.log_text()
    region = next(line for line in log.splitlines() if "model 'Big' instance 'Big_0_0' exchanges tensors" in line)
    key = region.split("shared memory region '")[1].split("'")[0]
    for text in messages:
        assert f"Failed to increase the shared memory pool size for key '{key}'" in text, text
        assert "use '--shm-size' flag" in text
    assert "That is little" in region and "docker run --shm-size" in region and "repogen deploy --shm-size" in region
    saw = "Failed to increase the shared memory pool size for key <region> ... --shm-size; small requests still answer"
    record("a 16 MiB output, /dev/shm 16 MiB (HTTP, gRPC)", 4, 2, 0, saw)
