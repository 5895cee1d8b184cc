"""What ``repogen serve`` prints once the server is ready: endpoints, models, two requests that work as printed."""

from __future__ import annotations

import json
import shlex
from typing import Any

from ...triton.endpoints import HTTP_PORT, infer_path
from ..client.infer import sample_value
from ..client.states import model_states
from .process import TritonServer, http_client

__all__ = ["ready_banner", "sample_curl", "sample_infer"]


def _sample_shape(tensor: dict[str, Any]) -> list[int]:
    """The input's shape as the metadata gives it (batch dimension included), each -1 as 1."""
    return [1 if int(d) < 0 else int(d) for d in tensor["shape"]]


def _nested(value: Any, shape: list[int]) -> Any:
    return value if not shape else [_nested(value, shape[1:]) for _ in range(shape[0])]


def sample_curl(http_url: str, model: str, metadata: dict[str, Any]) -> str:
    """A real request for ``model`` built from its metadata: every input, shape with -1 as 1."""
    inputs = []
    for tensor in metadata.get("inputs", []):
        shape = _sample_shape(tensor)
        count = 1
        for dim in shape:
            count *= dim
        value = sample_value(tensor["datatype"])
        inputs.append({"name": tensor["name"], "shape": shape, "datatype": tensor["datatype"], "data": [value] * count})
    body = json.dumps({"inputs": inputs}, separators=(",", ":"))
    return f"curl -s {http_url}{infer_path(model)} -d {shlex.quote(body)}"


def sample_infer(model: str, metadata: dict[str, Any], http_port: int) -> str:
    """The same request as ``repogen infer`` takes it: each value a nested list of the input's full shape.

    A scalar would do for a ``[-1, 1]`` input only; ``x=1.0`` fails for a ``[-1, 3]`` one, so every
    value is written out in full (fixed dims as declared, variable ones and the batch dimension as 1).
    """
    parts = ["repogen", "infer", model]
    for tensor in metadata.get("inputs", []):
        value = json.dumps(_nested(sample_value(tensor["datatype"]), _sample_shape(tensor)), separators=(",", ":"))
        parts += ["--input", f"{tensor['name']}={value}"]
    if http_port != HTTP_PORT:
        parts += ["--url", f"127.0.0.1:{http_port}"]
    return " ".join(shlex.quote(p) for p in parts)


def _index_and_metadata(server: TritonServer) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The repository index and the first ready, non-streaming model's metadata; empty where unanswered."""
    with http_client(server.http_url, timeout=2.0) as client:
        try:
            index = client.get_model_repository_index()
        except Exception:  # the banner is a courtesy: never fail serving over it
            return [], None
        for state in model_states(index):
            if state.state != "READY":
                continue
            try:
                config = client.get_model_config(state.name)
                if not config.get("model_transaction_policy", {}).get("decoupled"):  # curl cannot stream
                    return index, client.get_model_metadata(state.name)
            except Exception:
                return index, None
        return index, None


def ready_banner(server: TritonServer, version: str) -> list[str]:
    """Endpoints, model states and sample requests, as printed once the server is ready."""
    index, metadata = _index_and_metadata(server)
    states = model_states(index)
    ready = [s.name for s in states if s.state == "READY"]
    lines = [
        f"tritonserver {version} ready (pid {server.pid}), serving {len(ready)} model(s) from "
        f"{server.model_repository}: {', '.join(ready) or 'none'}",
        f"  HTTP     http://{server.http_url}",
        f"  gRPC     {server.grpc_url}",
        f"  metrics  {server.metrics_url}",
    ]
    for state in states:
        if state.state and state.state != "READY":
            lines.append(f"  not ready: {state.line()} ({state.state})")
    not_loaded = [s.name for s in states if not s.state]
    if not_loaded:
        lines.append(f"  not loaded (--model picks): {', '.join(not_loaded)}")
    if metadata:
        model = metadata["name"]
        lines += [
            "Try:",
            f"  {sample_curl(server.http_url, model, metadata)}",
            f"  {sample_infer(model, metadata, server.http_port)}",
        ]
    lines.append("Press Ctrl+C to stop.")
    return lines
