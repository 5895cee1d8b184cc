"""The `repogen serve` banner's `repogen infer` example is accepted by `repogen infer`'s own parsing, for every
kind of input; the real-server check is tests/integration/test_banner_examples_served.py."""

from __future__ import annotations

import shlex

import numpy as np

from repogen.server.client.states import reason_line
from repogen.server.client.values import parse_inputs, to_array
from repogen.server.running.banner import sample_infer

METADATA = {
    "name": "M",
    "inputs": [
        {"name": "x", "datatype": "FP32", "shape": [-1, 3]},  # batched, fixed size
        {"name": "v", "datatype": "INT32", "shape": [-1, -1]},  # batched, variable
        {"name": "text", "datatype": "BYTES", "shape": [-1, 1]},
        {"name": "m", "datatype": "UINT8", "shape": [2, 2]},  # no batch dimension
        {"name": "flag", "datatype": "BOOL", "shape": [1]},
    ],
}


def test_sample_infer_writes_every_value_in_its_full_shape() -> None:
    line = sample_infer("M", METADATA, 8000)
    assert line == (
        "repogen infer M --input 'x=[[1.0,1.0,1.0]]' --input 'v=[[1]]' --input 'text=[[\"hello\"]]' "
        "--input 'm=[[1,1],[1,1]]' --input 'flag=[true]'"
    )
    assert sample_infer("M", METADATA, 9000).endswith(" --url 127.0.0.1:9000")
    argv = shlex.split(line)
    parsed = parse_inputs([argv[i + 1] for i, arg in enumerate(argv) if arg == "--input"])
    shapes = {}
    for spec in METADATA["inputs"]:
        array = to_array(spec["name"], parsed[spec["name"]], spec["datatype"], spec["shape"])
        shapes[spec["name"]] = array.shape
    assert shapes == {"x": (1, 3), "v": (1, 1), "text": (1, 1), "m": (2, 2), "flag": (1,)}
    assert np.array_equal(to_array("text", parsed["text"], "BYTES", [-1, 1]), np.array([[b"hello"]], dtype=object))


def test_reason_line_of_a_failed_load_without_a_relative_frame() -> None:
    """load_model's answer ends with ";", and a model.py that fails at import has only absolute and frozen frames."""
    answer = (
        "load failed for model 'P': version 1 is at UNAVAILABLE state: Internal: RuntimeError: broken\n\nAt:\n"
        "  /r/P/1/model.py(1): <module>\n  <frozen importlib._bootstrap>(241): _call_with_frames_removed\n;"
    )
    assert reason_line(answer) == "RuntimeError: broken (at /r/P/1/model.py(1): <module>)"
