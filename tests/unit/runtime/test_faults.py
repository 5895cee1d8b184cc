"""Misbehaving callables and failing file systems, without a server (tests/integration/test_faults_served.py serves
them).

The runtime is driven in-process through ``repogen.local``, which runs the same ``TritonPythonModel``
the server runs; the writer is driven with injected ``OSError``s where a real file system cannot be
made to fail as root (the integration suite fills and freezes real tmpfs mounts).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, PyTritonUnrecoverableError, Repository, Tensor, batch
from repogen.errors import BuildError
from repogen.ondisk import writer
from repogen.runtime import contract, stub
from repogen.runtime.call_errors import ModelCallError
from repogen.runtime.payload import config_drift

X = np.array([[1.0, 2.0]], dtype=np.float32)
_IO = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(2,))],
    "outputs": [Tensor(name="y", dtype=np.float32, shape=(2,))],
    "config": ModelConfig(max_batch_size=8),
}


def _raiser(exc: BaseException):
    @batch
    def raising(x):
        raise exc

    return raising


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (SystemExit(3), "SystemExit: 3"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        (GeneratorExit("closed"), "GeneratorExit: closed"),
        (ValueError("bad x"), "ValueError: bad x"),
    ],
)
def test_any_base_exception_is_that_request_s_error_and_the_model_keeps_serving(exc, message):
    models = Repository()
    calls = []

    @batch
    def flaky(x):
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return {"y": x}

    models.bind(model_name="Flaky", infer_func=flaky, **_IO)
    local = models.local()
    with pytest.raises(ModelCallError) as info:
        local.infer("Flaky", {"x": X})
    assert str(info.value) == f"model 'Flaky' failed: {message}"  # no traceback, no file paths
    np.testing.assert_array_equal(local.infer("Flaky", {"x": X})["y"], X)


def test_an_exception_whose_message_cannot_be_printed_still_answers():
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    models = Repository()
    models.bind(model_name="Hostile", infer_func=_raiser(Hostile()), **_IO)
    with pytest.raises(ModelCallError, match=r"Hostile: <the exception's message could not be printed>"):
        models.local().infer("Hostile", {"x": X})


def test_an_async_callable_raising_system_exit_keeps_its_event_loop():
    models = Repository()
    calls = []

    @batch
    async def flaky(x):
        calls.append(1)
        if len(calls) == 1:
            raise SystemExit("async")
        return {"y": x}

    models.bind(model_name="Async", infer_func=flaky, **_IO)
    local = models.local()
    with pytest.raises(ModelCallError, match="SystemExit: async"):
        local.infer("Async", {"x": X})
    np.testing.assert_array_equal(local.infer("Async", {"x": X})["y"], X)


@pytest.mark.parametrize(("rows", "found"), [(2, "2 rows"), (0, "0 rows")])
def test_batch_refuses_outputs_with_another_row_count_strict_or_not(rows, found):
    for strict in (True, False):
        models = Repository()

        @batch
        def wrong(x):
            return {"y": np.zeros((rows, 2), np.float32)}

        models.bind(model_name="Rows", infer_func=wrong, strict=strict, **_IO)
        with pytest.raises(ModelCallError, match=rf"@batch: model 'Rows' output 'y' has {found}, expected 1 \(one per"):
            models.local().infer("Rows", {"x": X})


@pytest.mark.parametrize(
    ("value", "returned"),
    [
        (np.array([["abc", "d"]]), r"an array of dtype <U3 and shape \[1, 2\] \(\['abc' 'd'\]\)"),
        ([[{"a": 1}, 2]], r"list \[\[\{'a': 1\}, 2\]\]"),
    ],
)
def test_an_unconvertible_output_names_the_model_the_output_the_dtype_and_the_value(value, returned):
    models = Repository()

    @batch
    def text(x):
        return {"y": value}

    models.bind(model_name="Text", infer_func=text, **_IO)
    with pytest.raises(ModelCallError) as info:
        models.local().infer("Text", {"x": X})
    assert "model 'Text' output 'y' is declared FP32 (float32), but the callable returned " in str(info.value)
    assert "which cannot be converted to it (" in str(info.value)
    assert re.search(returned, str(info.value)), str(info.value)


def test_unrecoverable_error_in_process_stops_only_that_instance():
    models = Repository()

    @batch
    def doomed(x):
        if x[0, 0] < 0:
            raise PyTritonUnrecoverableError("weights are corrupt")
        return {"y": x}

    models.bind(model_name="Doomed", infer_func=doomed, **_IO)
    local = models.local()
    with pytest.raises(ModelCallError, match="PyTritonUnrecoverableError: weights are corrupt$"):
        local.infer("Doomed", {"x": -X})
    with pytest.raises(ModelCallError, match=r"model 'Doomed' stopped serving after PyTritonUnrecoverableError: "):
        local.infer("Doomed", {"x": X})


def test_a_stream_that_raises_system_exit_ends_with_that_error_and_unrecoverable_stops_it():
    models = Repository()

    @models.model("Ticks", inputs=_IO["inputs"], outputs=_IO["outputs"], config=ModelConfig(max_batch_size=8))
    @batch
    def ticks(x):
        yield {"y": x}
        if x[0, 0] < 0:
            raise PyTritonUnrecoverableError("sensor gone")
        raise SystemExit("mid-stream")

    local = models.local()
    stream = local.stream("Ticks", {"x": X})
    np.testing.assert_array_equal(next(stream)["y"], X)
    with pytest.raises(ModelCallError, match="SystemExit: mid-stream$"):
        next(stream)
    with pytest.raises(ModelCallError, match="PyTritonUnrecoverableError: sensor gone$"):
        list(local.stream("Ticks", {"x": -X}))
    with pytest.raises(ModelCallError, match="model 'Ticks' stopped serving after PyTritonUnrecoverableError"):
        list(local.stream("Ticks", {"x": X}))


# -- the stub's command line and the manifest's config hash ---------------------------------------


def test_stub_arguments_are_read_from_the_command_line(tmp_path):
    cmdline = tmp_path / "cmdline"
    argv = ["/x/triton_python_backend_stub", "/m/1/model.py", "triton_python_backend_shm_region_7", "1048576",
            "2097152", "4242", "/x/python", "336", "M_0_0", "DEFAULT"]  # fmt: skip
    cmdline.write_bytes("\0".join(argv).encode() + b"\0")
    assert contract.current(str(cmdline)) == contract.Stub("triton_python_backend_shm_region_7", 1048576, 2097152, 4242)
    cmdline.write_bytes(b"python\0-m\0pytest\0")
    assert contract.current(str(cmdline)) is None
    assert contract.current(str(tmp_path / "absent")) is None
    assert not contract.Stub("r", 1, 1, 2**22 + 1).stop_server()  # no such process: nothing is signalled


def test_shm_report_names_the_model_and_warns_only_when_little_is_free(monkeypatch):
    region = contract.Stub("triton_python_backend_shm_region_7", 1 << 20, 1 << 20, 1)
    line, low = stub.shm_report("M", "M_0_0", region)
    assert line.startswith("model 'M' instance 'M_0_0' exchanges tensors through shared memory region ")
    assert not low  # this machine's /dev/shm is large

    class Small:
        f_blocks, f_bavail, f_frsize = 16, 8, 1 << 20

    monkeypatch.setattr(stub.os, "statvfs", lambda path: Small)
    line, low = stub.shm_report("M", "M_0_0", region)
    assert low and "/dev/shm has 8.0 MiB free of 16.0 MiB" in line and "docker run --shm-size" in line


def test_an_edited_config_is_named_with_the_manifest_hash(tmp_path):
    repo, config = tmp_path / "repo", tmp_path / "repo" / "M" / "config.pbtxt"
    (repo / "M" / "1").mkdir(parents=True)
    config.write_text('name: "M"\n')
    listed = hashlib.sha256(config.read_bytes()).hexdigest()
    (repo / "repogen.manifest.json").write_text(json.dumps({"files": {"M/config.pbtxt": listed}}))
    assert config_drift(str(repo / "M" / "1"), "M") is None
    config.write_text('name: "M"\nmax_batch_size: 4\n')
    message = config_drift(str(repo / "M" / "1"), "M")
    assert message is not None
    assert f"model 'M': {config} is not the file `repogen build` wrote: its sha256 is " in message
    assert f"{repo / 'repogen.manifest.json'} lists {listed}" in message and "repogen validate" in message


# -- the writer: failures of the file system ------------------------------------------------------


def _files() -> dict[str, bytes]:
    return {"repogen.manifest.json": b'{"files": {"M/config.pbtxt": "x"}}', "M/config.pbtxt": b"x"}


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.ENOSPC, "free space there"),
        (errno.EROFS, "build onto a writable file system"),
        (errno.EACCES, "build as a user that may write there"),
    ],
)
def test_a_failing_write_is_one_error_and_the_previous_repository_stays(tmp_path, monkeypatch, code, fix):
    output = tmp_path / "repo"
    writer.write_repository(_files(), output)
    before = {p: p.read_bytes() for p in output.rglob("*") if p.is_file()}

    def failing(self: Path, data: bytes) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(Path, "write_bytes", failing)
    with pytest.raises(BuildError) as info:
        writer.write_repository(_files(), output)
    message = str(info.value)
    assert "\n" not in message
    assert f"cannot write the repository {output}: {tmp_path}/.repo.repogen-" in message
    assert f"{os.strerror(code)} (errno {code}); {fix}" in message
    assert message.endswith(f"The previous repository at {output} is intact.")
    assert {p: p.read_bytes() for p in output.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]  # the staging copy is gone


def test_a_failed_swap_without_renameat2_puts_the_previous_repository_back(tmp_path, monkeypatch):
    output = tmp_path / "repo"
    writer.write_repository(_files(), output)
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    real_rename = os.rename

    def rename(src, dst):
        if ".repogen-" in str(src) and not str(src).endswith("-old"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(src))
        real_rename(src, dst)

    monkeypatch.setattr(writer.os, "rename", rename)
    with pytest.raises(BuildError, match=r"Input/output error \(errno 5\).*The previous repository at .* is intact\."):
        writer.write_repository(_files(), output)
    assert (output / "M" / "config.pbtxt").read_bytes() == b"x"


def test_nothing_written_is_said_for_a_new_output(tmp_path, monkeypatch):
    monkeypatch.setattr(writer.tempfile, "mkdtemp", lambda **kw: (_ for _ in ()).throw(PermissionError(13, "no")))
    with pytest.raises(BuildError, match=rf"Nothing was written to {tmp_path / 'new'}\.$"):
        writer.write_repository(_files(), tmp_path / "new")
