"""repogen infer's input handling (no server): values, files, datatypes and shapes from metadata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repogen.cli import cli
from repogen.errors import UsageError
from repogen.server.client.infer import (
    InferError,
    InferOutput,
    InferResult,
    format_json,
    format_pretty,
    parse_input,
    to_array,
)
from repogen.server.running.banner import sample_curl
from repogen.server.running.process import free_ports


def test_parse_input_values() -> None:
    assert parse_input("a=[[1,2,3]]") == ("a", [[1, 2, 3]])
    assert parse_input("n=3") == ("n", 3)
    assert parse_input("text=hello world") == ("text", "hello world")
    assert parse_input('text="42"') == ("text", "42")
    assert parse_input("eq=a=b") == ("eq", "a=b")
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_input("novalue")


def test_parse_input_npy(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.arange(6, dtype=np.int32).reshape(2, 3))
    name, value = parse_input(f"x=@{path}")
    assert name == "x" and value.dtype == np.int32 and value.shape == (2, 3)
    with pytest.raises(InferError, match="cannot load"):
        parse_input(f"x=@{tmp_path / 'missing.npy'}")


@pytest.mark.parametrize(
    ("value", "shape", "expected_shape"),
    [
        ([[1, 2]], [-1, -1], (1, 2)),
        ([1, 2], [-1, -1], (1, 2)),  # the batch dimension is added
        (3, [-1, 1], (1, 1)),  # a scalar fills every dimension
        ([1, 2, 3], [-1, 1], (3, 1)),  # one free dimension takes the rest
        ([[1, 2, 3]], [3], (3,)),
    ],
)
def test_to_array_fits_shapes(value: object, shape: list[int], expected_shape: tuple[int, ...]) -> None:
    array = to_array("a", value, "FP32", shape)
    assert array.dtype == np.float32 and array.shape == expected_shape


def test_to_array_bytes_and_errors() -> None:
    array = to_array("t", "héllo", "BYTES", [-1, 1])
    assert array.dtype == object and array.tolist() == [["héllo".encode()]]
    with pytest.raises(InferError, match="expects FP32"):
        to_array("a", "abc", "FP32", [-1])
    with pytest.raises(InferError, match=r"has shape \[-1, 4\]"):
        to_array("a", [[1, 2, 3]], "INT32", [-1, 4])


def test_integers_stay_exact_at_any_size() -> None:
    """numpy reads [0, 2**64-1] as float64, which holds 2**64-1 as 2**64 and 2**63+1 as 2**63."""
    assert to_array("u", [0, 2**64 - 1], "UINT64", [-1]).tolist() == [0, 2**64 - 1]
    assert to_array("u", [2**63 + 1, 2.0], "UINT64", [-1]).tolist() == [2**63 + 1, 2]
    assert to_array("i", [-(2**63), 2**63 - 1], "INT64", [-1]).tolist() == [-(2**63), 2**63 - 1]
    with pytest.raises(InferError, match=r"found \[18446744073709551616\], outside UINT64's range"):
        to_array("u", [2**64], "UINT64", [-1])
    with pytest.raises(InferError, match="found 1.5, which is not a whole number"):
        to_array("i", [1, 1.5], "INT8", [-1])
    with pytest.raises(InferError, match="pass numbers"):
        to_array("i", [2**64, "a"], "INT64", [-1])


def test_formatting() -> None:
    result = InferResult(
        "M",
        "1",
        (
            InferOutput("add", "FP32", np.array([[4.0, 6.0]], dtype=np.float32)),
            InferOutput("t", "BYTES", np.array([[b"hi"]], dtype=object)),
        ),
    )
    pretty = format_pretty(result)
    assert "add  FP32  shape [1, 2]" in pretty and "[[4., 6.]]" in pretty and '[["hi"]]' in pretty
    assert '"data": [[4.0, 6.0]]' in format_json(result)


def test_sample_curl_is_built_from_metadata() -> None:
    metadata = {
        "inputs": [
            {"name": "a", "datatype": "FP32", "shape": [-1, 3]},
            {"name": "t", "datatype": "BYTES", "shape": [-1, 1]},
        ]
    }
    curl = sample_curl("127.0.0.1:8000", "M", metadata)
    assert curl == (
        'curl -s 127.0.0.1:8000/v2/models/M/infer -d \'{"inputs":[{"name":"a","shape":[1,3],'
        '"datatype":"FP32","data":[1.0,1.0,1.0]},{"name":"t","shape":[1,1],"datatype":"BYTES","data":["hello"]}]}\''
    )


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unreachable_server_is_a_clear_error(protocol: str) -> None:
    (port,) = free_ports(1)
    result = CliRunner().invoke(
        cli, ["infer", "AddSub", "-i", "a=1", "--url", f"127.0.0.1:{port}", "--protocol", protocol]
    )
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot reach a Triton server at 127.0.0.1:{port} over {protocol}")
    assert "repogen serve" in result.output


def test_serve_refuses_a_missing_repository(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "is not a directory" in result.output
    ports = ["--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"]
    result = CliRunner().invoke(cli, ["serve", str(tmp_path), "--tritonserver", str(tmp_path / "x"), *ports])
    assert result.exit_code == 1 and "no executable file there" in result.output
