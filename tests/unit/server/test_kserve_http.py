"""The CLI's standard-library HTTP client: the binary data extension's bytes and the server's error answers.

Its requests against a real server are tests/integration/test_cli_infer_served.py's (every datatype, over
HTTP beside gRPC); here what no stock model answers: BF16 outputs and error bodies that are not KServe's.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from repogen.server.client.kserve_http import HttpClient, ServerError, _error, _from_bytes, _from_json, _to_bytes


def test_bytes_elements_are_length_prefixed_both_ways() -> None:
    array = np.array([[b"", "\u00e9".encode()], [b"\xff\x00", b"abc"]], dtype=object)
    raw = _to_bytes(array, "BYTES")
    assert raw == b"".join(struct.pack("<I", len(v)) + v for v in array.reshape(-1))
    back = _from_bytes({"name": "t", "datatype": "BYTES", "shape": [2, 2]}, raw)
    assert back.dtype == object and back.tolist() == array.tolist()


def test_bf16_reads_as_float32_with_its_low_half_zero() -> None:
    floats = np.array([1.0, -2.5, 3.140625], dtype=np.float32)  # each exact in bfloat16
    raw = (floats.view(np.uint32) >> 16).astype("<u2").tobytes()
    back = _from_bytes({"name": "b", "datatype": "BF16", "shape": [3]}, raw)
    assert back.dtype == np.float32 and back.tolist() == floats.tolist()


def test_numbers_keep_their_dtype_and_shape() -> None:
    array = np.arange(6, dtype=np.uint16).reshape(2, 3)
    back = _from_bytes({"name": "n", "datatype": "UINT16", "shape": [2, 3]}, _to_bytes(array, "UINT16"))
    assert back.dtype == np.uint16 and back.tolist() == array.tolist()
    answered = _from_json({"name": "n", "datatype": "FP16", "shape": [1, 2], "data": [0.5, 2]})
    assert answered.dtype == np.float16 and answered.tolist() == [[0.5, 2.0]]


def test_error_answers_read_as_tritonclient_reads_them() -> None:
    error = _error(400, b'{"error":"unexpected shape for input \'a\'"}')
    assert isinstance(error, ServerError) and error.status() == "400"
    assert error.message() == "unexpected shape for input 'a'"
    assert _error(502, b"").message() == "client received an empty response from the server."
    proxy = _error(502, b"<html>Bad Gateway</html>")  # a proxy in front of the server
    assert proxy.status() == "502" and "'<html>Bad Gateway</html>', not a KServe v2 error" in proxy.message()


def test_an_address_with_a_base_path_and_a_bad_port() -> None:
    assert HttpClient("127.0.0.1:8000/triton/").base == "/triton/"
    assert HttpClient("127.0.0.1:8000").base == "/"
    with pytest.raises(Exception, match="nonnumeric port"):
        HttpClient("127.0.0.1:http")
