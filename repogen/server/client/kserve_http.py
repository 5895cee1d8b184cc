"""The KServe v2 HTTP protocol on the standard library, for the CLI's client commands over HTTP.

``import tritonclient.http`` (gevent, geventhttpclient, ml_dtypes) costs more than the request a command
sends: about 0.1 s of the ``repogen infer`` the user waits for. The calls below are the ones
``infer``, ``status``, ``load``, ``unload`` and ``perf`` make, with tritonclient's names, arguments
and errors (:class:`ServerError` has ``message()`` and ``status()``, the HTTP status as a string), so
:class:`~repogen.server.client.access_key.KeyedClient` wraps either client. Tensors travel in the binary
data extension both ways, as tritonclient sends them: every datatype numpy has, BYTES included.
"""

from __future__ import annotations

import http.client
import json
import struct
from typing import Any
from urllib.parse import quote

import numpy as np

from ...triton.dtypes import numpy_dtype

__all__ = ["HttpClient", "ServerError"]

HEADER_LENGTH = "Inference-Header-Content-Length"  # the JSON part's length, before the tensors' bytes
TIMEOUT_S = 60.0  # tritonclient.http's connection and network timeouts


class ServerError(Exception):
    """The server answered with an error status: its ``{"error": ...}`` message and the HTTP status."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(f"[{status}] {message}")
        self._message, self._status = message, status

    def message(self) -> str:
        return self._message

    def status(self) -> str:
        return self._status


class HttpClient:
    """One keep-alive connection to ``host:port`` (optionally ``host:port/base``)."""

    def __init__(self, url: str, timeout: float = TIMEOUT_S) -> None:
        address, _, base = url.partition("/")
        self.base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
        self.connection = http.client.HTTPConnection(address, timeout=timeout)  # InvalidURL for a bad port
        self.used = False

    def close(self) -> None:
        self.connection.close()

    def _call(
        self, method: str, path: str, headers: dict[str, str] | None, body: bytes | None = None
    ) -> http.client.HTTPResponse:
        sent = dict(headers or {})
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
        reused, self.used = self.used, True
        try:
            self.connection.request(method, self.base + path, body=body, headers=sent)
            return self.connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused:
                raise
            self.connection.close()  # the server closed the kept-alive connection between calls: one fresh try
            self.connection.request(method, self.base + path, body=body, headers=sent)
            return self.connection.getresponse()

    def _answer(
        self, method: str, path: str, headers: dict[str, str] | None, body: bytes | None = None
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """The response and its body; :class:`ServerError` for an error status."""
        response = self._call(method, path, headers, body)
        content = response.read()
        if response.status != 200:
            raise _error(response.status, content)
        return response, content

    def _json(self, method: str, path: str, headers: dict[str, str] | None, body: bytes | None = None) -> Any:
        content = self._answer(method, path, headers, body)[1]
        return json.loads(content) if content else {}

    def _healthy(self, path: str, headers: dict[str, str] | None) -> bool:
        response = self._call("GET", path, headers)
        response.read()
        return response.status == 200

    def is_server_live(self, headers: dict[str, str] | None = None) -> bool:
        return self._healthy("v2/health/live", headers)

    def is_server_ready(self, headers: dict[str, str] | None = None) -> bool:
        return self._healthy("v2/health/ready", headers)

    def get_server_metadata(self, headers: dict[str, str] | None = None) -> Any:
        return self._json("GET", "v2", headers)

    def get_model_repository_index(self, headers: dict[str, str] | None = None) -> Any:
        return self._json("POST", "v2/repository/index", headers, b"")

    def get_model_metadata(self, model_name: str, headers: dict[str, str] | None = None) -> Any:
        return self._json("GET", f"v2/models/{quote(model_name)}", headers)

    def get_model_config(self, model_name: str, headers: dict[str, str] | None = None) -> Any:
        return self._json("GET", f"v2/models/{quote(model_name)}/config", headers)

    def get_inference_statistics(self, headers: dict[str, str] | None = None) -> Any:
        return self._json("GET", "v2/models/stats", headers)

    def load_model(self, model_name: str, headers: dict[str, str] | None = None) -> None:
        self._json("POST", f"v2/repository/models/{quote(model_name)}/load", headers, b"{}")

    def unload_model(self, model_name: str, headers: dict[str, str] | None = None) -> None:
        self._json("POST", f"v2/repository/models/{quote(model_name)}/unload", headers, b"{}")

    def infer(
        self,
        model_name: str,
        arrays: dict[str, tuple[str, np.ndarray]],
        outputs: list[str],
        headers: dict[str, str] | None = None,
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One request; the response's JSON and its outputs by name (all of them when ``outputs`` is empty)."""
        blobs = [_to_bytes(array, datatype) for datatype, array in arrays.values()]
        request: dict[str, Any] = {
            "inputs": [
                {"name": name, "shape": list(array.shape), "datatype": datatype,
                 "parameters": {"binary_data_size": len(blob)}}
                for (name, (datatype, array)), blob in zip(arrays.items(), blobs, strict=True)
            ]
        }  # fmt: skip
        if outputs:
            request["outputs"] = [{"name": name, "parameters": {"binary_data": True}} for name in outputs]
        else:
            request["parameters"] = {"binary_data_output": True}
        header = json.dumps(request).encode()
        sent = {**(headers or {}), HEADER_LENGTH: str(len(header)), "Content-Type": "application/octet-stream"}
        response, content = self._answer(
            "POST", f"v2/models/{quote(model_name)}/infer", sent, b"".join([header, *blobs])
        )
        length = int(response.getheader(HEADER_LENGTH) or len(content))
        answer = json.loads(content[:length])
        offset, arrays_out = length, {}
        for output in answer.get("outputs", []):
            size = output.get("parameters", {}).get("binary_data_size")
            if size is None:
                arrays_out[output["name"]] = _from_json(output)
            else:
                arrays_out[output["name"]] = _from_bytes(output, content[offset : offset + size])
                offset += size
        return answer, arrays_out


def _error(status: int, content: bytes) -> ServerError:
    """tritonclient's reading of an error answer: the body's ``error``, the status as a string."""
    text = content.decode("utf-8", errors="replace")
    try:
        message = str(json.loads(text)["error"]) if text else "client received an empty response from the server."
    except (ValueError, KeyError, TypeError):
        message = f"the server answered {status} with {text!r}, not a KServe v2 error"
    return ServerError(message, str(status))


def _to_bytes(array: np.ndarray, datatype: str) -> bytes:
    if datatype != "BYTES":
        return np.ascontiguousarray(array).tobytes()
    items = [item if isinstance(item, bytes) else str(item).encode() for item in array.reshape(-1)]
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def _from_bytes(output: dict[str, Any], raw: bytes) -> np.ndarray:
    shape, datatype = output["shape"], output["datatype"]
    if datatype == "BYTES":
        items, offset = [], 0
        while offset < len(raw):
            (length,) = struct.unpack_from("<I", raw, offset)
            items.append(raw[offset + 4 : offset + 4 + length])
            offset += 4 + length
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(shape)
    if datatype == "BF16":  # as tritonclient reads it: float32 with the low 16 bits zero
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=_dtype(datatype)).reshape(shape)


def _from_json(output: dict[str, Any]) -> np.ndarray:
    datatype = output["datatype"]
    if datatype == "BYTES":
        return np.array([str(v).encode() for v in output["data"]], dtype=object).reshape(output["shape"])
    return np.array(output["data"], dtype=_dtype(datatype)).reshape(output["shape"])


def _dtype(datatype: str) -> np.dtype[Any]:
    dtype = numpy_dtype(datatype)
    if dtype is None:
        raise ServerError(f"the server answered a {datatype} output, which this client cannot read", "200")
    return np.dtype(dtype)
