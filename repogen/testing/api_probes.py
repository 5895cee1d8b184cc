"""Ask each of Triton's API groups, over HTTP and gRPC, with or without the access key.

The integration tests (the embedded server) and the container tests (a generated deployment on a
stand-in image) send the same requests: one per group and protocol, against the quickstart's AddSub.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from ..triton.restricted_apis import grpc_header

__all__ = ["GRPC_CALLS", "HTTP_CALLS", "ask_grpc", "ask_http"]

_ADD = {"inputs": [{"name": n, "shape": [1, 1], "datatype": "FP32", "data": [1]} for n in ("a", "b")]}

HTTP_CALLS: dict[str, tuple[str, str, Any]] = {
    "health": ("GET", "/v2/health/ready", None),
    "metadata": ("GET", "/v2", None),
    "model-config": ("GET", "/v2/models/AddSub/config", None),
    "inference": ("POST", "/v2/models/AddSub/infer", _ADD),
    "shared-memory": ("GET", "/v2/systemsharedmemory/status", None),
    "model-repository": ("POST", "/v2/repository/index", {}),
    "statistics": ("GET", "/v2/models/stats", None),
    "trace": ("GET", "/v2/trace/setting", None),
    "logging": ("POST", "/v2/logging", {"log_verbose_level": 0}),
}
"""One request per API group: method, path, JSON body."""


def _inputs() -> list[Any]:
    inputs = [grpcclient.InferInput(name, [1, 1], "FP32") for name in ("a", "b")]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 1), np.float32))
    return inputs


GRPC_CALLS: dict[str, Callable[[Any, dict[str, str] | None], Any]] = {
    "health": lambda c, h: c.is_server_ready(headers=h),
    "metadata": lambda c, h: c.get_server_metadata(headers=h),
    "model-config": lambda c, h: c.get_model_config("AddSub", headers=h),
    "inference": lambda c, h: c.infer("AddSub", _inputs(), headers=h),
    "shared-memory": lambda c, h: c.get_system_shared_memory_status(headers=h),
    "model-repository": lambda c, h: c.get_model_repository_index(headers=h),
    "statistics": lambda c, h: c.get_inference_statistics(headers=h),
    "trace": lambda c, h: c.get_trace_settings(headers=h),
    "logging": lambda c, h: c.get_log_settings(headers=h),
}


def ask_http(url: str, api: str, key: str | None = None) -> tuple[int, str]:
    """``api``'s request to ``host:port``, with ``key`` in the header when given: (status, body)."""
    method, path, body = HTTP_CALLS[api]
    data = None if body is None else json.dumps(body).encode()
    headers = {"triton-access-token": key} if key is not None else {}
    request = urllib.request.Request(f"http://{url}{path}", data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def ask_grpc(url: str, api: str, key: str | None = None) -> str:
    """``api``'s call to ``host:port`` over gRPC: ``"OK"`` or ``"<status>: <message>"``."""
    with grpcclient.InferenceServerClient(url) as client:
        try:
            GRPC_CALLS[api](client, {grpc_header(): key} if key is not None else None)
        except InferenceServerException as exc:
            return f"{exc.status()}: {exc.message()}"
    return "OK"
