"""A user's large files never pass through the build's memory: emit plans them as (source, digest), the writer copies.

The RSS test builds an app with a 512 MiB network file (sparse: nothing is written to disk for it) and the same
app without it, each in a fresh process, and compares their peak RSS; reading the file whole, as emit did,
added its size. ONNX graphs that keep their weights outside the file (``location=``) ship with those files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.emit.assemble import emit_repository
from repogen.errors import BuildError
from repogen.hashing import FileCopy, sha256_file
from repogen.ir import lower
from repogen.ondisk.writer import write_repository
from repogen.testing.onnx_graphs import FLOAT, write_graph
from repogen.triton.onnx_graph import read_graph
from repogen.triton.proto import onnx_graph_pb2 as onnx_pb

X = [Tensor(name="x", dtype=np.float32, shape=(3,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(3,))]
BATCHED = ModelConfig(max_batch_size=8)
LARGE = 512 << 20

APP = """\
import os
import numpy as np
from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def double(x):
    return {"y": x * 2}


models.bind("Double", double, [Tensor(name="x", dtype=np.float32, shape=(-1,))],
            [Tensor(name="y", dtype=np.float32, shape=(-1,))], config=ModelConfig(max_batch_size=8))
if os.environ.get("REPOGEN_TEST_PLAN"):
    models.tensorrt("Big", os.environ["REPOGEN_TEST_PLAN"], inputs=[Tensor(name="i", dtype=np.float32, shape=(4,))],
                    outputs=[Tensor(name="o", dtype=np.float32, shape=(4,))], config=ModelConfig(max_batch_size=8))
"""

# Runs the build as its only child, then prints that child's peak RSS in KiB.
MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


@batch
def _double(x):
    return {"y": x * 2}


def _peak_rss_kib(app: Path, output: Path, plan: Path | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "REPOGEN_TEST_PLAN"}
    if plan is not None:
        env["REPOGEN_TEST_PLAN"] = str(plan)
    command = [
        sys.executable,
        "-c",
        MEASURE,
        sys.executable,
        "-m",
        "repogen",
        "build",
        f"{app}:models",
        "-o",
        str(output),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=600)
    return int(done.stdout.split()[-1])


def test_a_large_network_file_never_passes_through_memory(tmp_path: Path) -> None:
    app, plan = tmp_path / "app.py", tmp_path / "model.plan"
    app.write_text(APP)
    with plan.open("wb") as handle:
        handle.truncate(LARGE)
    without = _peak_rss_kib(app, tmp_path / "small", None)
    with_plan = _peak_rss_kib(app, tmp_path / "big", plan)
    assert (with_plan - without) * 1024 < 100 << 20, (without, with_plan)  # reading it whole added 512 MiB
    copied = tmp_path / "big" / "Big" / "1" / "model.plan"
    assert copied.stat().st_size == LARGE and copied.stat().st_blocks * 512 < 1 << 20  # holes stay holes
    manifest = json.loads((tmp_path / "big" / "repogen.manifest.json").read_text())
    assert manifest["files"]["Big/1/model.plan"] == sha256_file(plan)


def _repository(tmp_path: Path) -> Repository:
    (tmp_path / "model.plan").write_bytes(b"plan " * 1000)
    (tmp_path / "weights.bin").write_bytes(b"\x01" * 4096)
    included = tmp_path / "handmade"
    (included / "1").mkdir(parents=True)
    (included / "config.pbtxt").write_text('name: "Handmade"\nbackend: "python"\nmax_batch_size: 0\n')
    (included / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    models = Repository()
    models.bind("Double", _double, X, Y, config=BATCHED, files=[tmp_path / "weights.bin"])
    models.bind("Double", _double, X, Y, config=BATCHED, model_version=2, files=[tmp_path / "weights.bin"])
    models.tensorrt("Plan", tmp_path / "model.plan", inputs=X, outputs=Y, config=BATCHED)
    models.include("Handmade", included)
    return models


def test_emit_plans_the_users_files_as_copies_and_writes_nothing(tmp_path: Path) -> None:
    spec = lower(_repository(tmp_path))
    before = sorted(tmp_path.rglob("*"))
    files = emit_repository(spec)
    assert sorted(tmp_path.rglob("*")) == before
    copies = {path: entry for path, entry in files.items() if isinstance(entry, FileCopy)}
    assert sorted(copies) == [
        "Double/1/files/weights.bin", "Double/2/files/weights.bin", "Handmade/1/model.py", "Handmade/config.pbtxt",
        "Plan/1/model.plan",
    ]  # fmt: skip
    manifest = json.loads(files["repogen.manifest.json"])  # type: ignore[arg-type]
    for path, entry in copies.items():
        assert manifest["files"][path] == entry.sha256 == sha256_file(entry.source)


def test_the_writer_copies_once_and_refuses_a_file_changed_since_it_was_hashed(tmp_path: Path) -> None:
    models = _repository(tmp_path)
    build_repository(models, tmp_path / "repo")
    first, second = (tmp_path / "repo" / "Double" / str(v) / "files" / "weights.bin" for v in (1, 2))
    assert first.read_bytes() == (tmp_path / "weights.bin").read_bytes()
    assert first.stat().st_ino == second.stat().st_ino != (tmp_path / "weights.bin").stat().st_ino  # one copy
    files = emit_repository(lower(models))
    (tmp_path / "model.plan").write_bytes(b"edited while the build ran")
    with pytest.raises(BuildError, match=r"model\.plan changed while the build ran \(it was hashed as 5000 bytes"):
        write_repository(files, tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_an_onnx_graph_ships_with_its_external_data(tmp_path: Path) -> None:
    graph = write_graph(tmp_path / "net.onnx", [("x", FLOAT, ["b", 3])], [("y", FLOAT, ["b", 3])],
                        initializers=["w", "b"], external="weights/net.data")  # fmt: skip
    models = Repository()
    models.onnx("Net", graph, config=BATCHED)
    build_repository(models, tmp_path / "repo")
    shipped = tmp_path / "repo" / "Net" / "1" / "weights" / "net.data"
    assert shipped.read_bytes() == (tmp_path / "weights" / "net.data").read_bytes() and len(shipped.read_bytes()) == 24
    manifest = json.loads((tmp_path / "repo" / "repogen.manifest.json").read_text())
    assert manifest["files"]["Net/1/weights/net.data"] == sha256_file(shipped)
    (tmp_path / "weights" / "net.data").unlink()
    with pytest.raises(BuildError, match=r"keeps tensor data in 'weights/net.data' \(external data\), but .* does "):
        build_repository(models, tmp_path / "repo2")


def test_external_data_outside_the_graph_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "graphs").mkdir()
    graph = write_graph(tmp_path / "graphs" / "net.onnx", [("x", FLOAT, ["b", 3])], [("y", FLOAT, ["b", 3])],
                        initializers=["w"], external="../net.data")  # fmt: skip
    models = Repository()
    models.onnx("Net", graph, config=BATCHED)
    with pytest.raises(BuildError, match=r"keeps tensor data in '../net.data', which is not a path inside its dir"):
        build_repository(models, tmp_path / "repo")


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field, as ONNX's TensorProto.raw_data (9) is written."""
    return bytes(_varint((number << 3) | 2)) + bytes(_varint(len(data))) + data


def _varint(value: int) -> bytearray:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return out


def test_weights_inside_an_onnx_file_are_skipped_not_read(tmp_path: Path) -> None:
    path = write_graph(tmp_path / "net.onnx", [("x", FLOAT, ["b", 3])], [("y", FLOAT, ["b", 3])], initializers=["w"])
    light = read_graph(path, "model 'Net'")
    model = onnx_pb.ModelProto()
    model.ParseFromString(path.read_bytes())
    model.graph.initializer[0].MergeFromString(_field(9, b"\x01" * (16 << 20)))  # raw_data: 16 MiB of weights
    path.write_bytes(model.SerializeToString())
    assert path.stat().st_size > 16 << 20
    tracemalloc.start()
    try:
        heavy = read_graph(path, "model 'Net'")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert heavy == light and peak < 4 << 20, peak  # parsed whole, the file alone was 16 MiB
