"""The pure parts of serve/infer/perf (no server): failure lines, what a rebuild changed, values, perf's inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repogen.errors import UsageError
from repogen.server.client.perf import input_data
from repogen.server.client.states import failed, failure_lines, model_states, reason_line
from repogen.server.client.values import InferError, parse_inputs, to_array
from repogen.server.running.reload import changes, model_hashes

ROOT = Path(__file__).resolve().parents[3]


def test_reason_line_from_the_index_and_from_a_failed_load() -> None:
    traceback = "Internal: RuntimeError: weights file missing\n\nAt:\n  app.py(16): __init__\n  runtime.py(39): x\n"
    assert reason_line(traceback) == "RuntimeError: weights file missing (at app.py(16): __init__)"
    load = f"load failed for model 'M': version 1 is at UNAVAILABLE state: {traceback};"
    assert reason_line(load) == "RuntimeError: weights file missing (at app.py(16): __init__)"
    assert (
        reason_line("failed to read text proto from /m/config.pbtxt")
        == "failed to read text proto from /m/config.pbtxt"
    )
    assert reason_line("") == "no reason given (see the server log)"
    inside = (
        "Internal: FileNotFoundError: no 'scales.npy'\n\nAt:\n  /m/1/repogen/runtime/context.py(135): path\n"
        "  app.py(9): __init__\n"
    )
    assert reason_line(inside) == "FileNotFoundError: no 'scales.npy' (at app.py(9): __init__)"


def test_failed_models_from_the_repository_index() -> None:
    index = [
        {"name": "Good", "version": "1", "state": "READY"},
        {"name": "Broken", "version": "1", "state": "UNAVAILABLE", "reason": "Internal: ValueError: bad"},
        {"name": "Off", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"},
        {"name": "Never"},
    ]
    states = model_states({"models": index})  # gRPC's as_json shape; HTTP gives the list
    assert [s.name for s in states] == ["Broken", "Good", "Never", "Off"]
    assert failure_lines(failed(states)) == ["  Broken (version 1): ValueError: bad"]
    assert failed(states, only=["Good"]) == []


def test_changes_between_two_builds(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app).mkdir()
    for name in ("app.py", "stable.py", "edited.py"):
        (app / name).write_text((ROOT / "tests" / "apps" / "reload" / name).read_text())
    build = [sys.executable, "-m", "repogen", "build", f"{app / 'app.py'}:models", "-o"]
    subprocess.run([*build, str(tmp_path / "one")], check=True, capture_output=True)  # fresh imports, as serve builds
    (app / "edited.py").write_text((app / "edited.py").read_text().replace("x + 1", "x + 2"))
    subprocess.run([*build, str(tmp_path / "two")], check=True, capture_output=True)
    before, after = model_hashes(tmp_path / "one"), model_hashes(tmp_path / "two")
    assert set(before) == {"Edited", "Stable"} and "config.pbtxt" in before["Stable"]
    diff = changes(before, after)
    assert (diff.changed, diff.added, diff.removed, diff.unchanged) == (("Edited",), (), (), ("Stable",))
    del after["Stable"]
    after["New"] = {}
    diff = changes(before, after)
    assert (diff.added, diff.removed) == (("New",), ("Stable",))


def test_values_are_converted_only_when_nothing_changes(tmp_path: Path) -> None:
    assert to_array("n", 2.0, "INT64", [-1, 1]).tolist() == [[2]]
    assert to_array("b", [True, 0], "BOOL", [2]).tolist() == [True, False]
    assert to_array("f", 0.1, "FP16", [1]).dtype == np.float16  # decimal floats round, as any float input does
    for value, datatype, message in [
        (1.5, "INT64", "found 1.5, which is not a whole number"),
        ([1, -1], "UINT32", "outside UINT32's range 0..4294967295"),
        (70000.0, "FP16", "too large for FP16 (it would become inf)"),
        (2, "BOOL", "pass true/false (or 1/0)"),
        ([[1, 2], [3]], "INT32", "pass a rectangular nested list"),
    ]:
        with pytest.raises(InferError, match=message.replace("(", r"\(").replace(")", r"\)")):
            to_array("v", value, datatype, [-1])
    assert to_array("x", np.arange(3, dtype=np.int16), "FP32", [3]).dtype == np.float32  # a safe cast
    with pytest.raises(InferError, match=r"found a int64 array in its \.npy file"):
        to_array("x", np.arange(3, dtype=np.int64), "INT32", [3])
    with pytest.raises(UsageError, match=r"input 'a' is given twice \(--input a=1 and --input a=2\)"):
        parse_inputs(["a=1", "a=2"])


def test_perf_input_data_from_metadata() -> None:
    metadata = {
        "name": "M",
        "inputs": [
            {"name": "a", "datatype": "FP32", "shape": [-1, -1]},
            {"name": "t", "datatype": "BYTES", "shape": [-1, 1]},
            {"name": "o", "datatype": "INT32", "shape": [-1, 1]},
        ],
        "config": {"max_batch_size": 8, "input": [{"name": "o", "optional": True}]},
    }
    given = {"t": ("BYTES", np.array([[b"hi"]], dtype=object))}
    data, shapes = input_data(metadata, given, {"a": [3]})
    assert json.loads(json.dumps(data)) == {  # what perf_analyzer reads: one sample, no batch dimension
        "data": [{"a": {"content": [1.0, 1.0, 1.0], "shape": [3]}, "t": {"content": ["hi"], "shape": [1]}}]
    }
    assert shapes == ["--shape=a:3"]
    with pytest.raises(InferError, match=r"--shape t: model 'M' declares \[1\]"):
        input_data(metadata, {}, {"t": [2]})
    with pytest.raises(InferError, match="one sample per batch element, found a batch of 2"):
        input_data(metadata, {"t": ("BYTES", np.array([[b"a"], [b"b"]], dtype=object))}, {})
