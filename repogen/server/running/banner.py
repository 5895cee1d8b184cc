"""What ``repogen serve`` prints once the server is ready: endpoints, models, two requests that work as printed."""

from __future__ import annotations

import json
import shlex
from typing import Any

from ...triton.endpoints import HTTP_PORT, infer_path
from ...triton.restricted_apis import HEADER, PROTOCOL_NAMES, first_http_release
from ..client.access_key import ENV, runs_root
from ..client.infer import sample_value
from ..client.states import model_states
from .server_process import ServerProcess

__all__ = ["access_lines", "ready_banner", "sample_curl", "sample_infer"]


def _sample_shape(tensor: dict[str, Any]) -> list[int]:
    """The input's shape as the metadata gives it (batch dimension included), each -1 as 1."""
    return [1 if int(d) < 0 else int(d) for d in tensor["shape"]]


def _nested(value: Any, shape: list[int]) -> Any:
    return value if not shape else [_nested(value, shape[1:]) for _ in range(shape[0])]


def sample_curl(http_url: str, model: str, metadata: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    """A real request for ``model`` built from its metadata: every input, shape with -1 as 1.

    ``headers``: the access key's, where inference needs it."""
    inputs = []
    for tensor in metadata.get("inputs", []):
        shape = _sample_shape(tensor)
        count = 1
        for dim in shape:
            count *= dim
        value = sample_value(tensor["datatype"])
        inputs.append({"name": tensor["name"], "shape": shape, "datatype": tensor["datatype"], "data": [value] * count})
    body = json.dumps({"inputs": inputs}, separators=(",", ":"))
    sent = "".join(f" -H {shlex.quote(f'{name}: {value}')}" for name, value in (headers or {}).items())
    return f"curl -s{sent} {http_url}{infer_path(model)} -d {shlex.quote(body)}"


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


def _index_and_metadata(server: ServerProcess) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The repository index and the first ready, non-streaming model's metadata; empty where unanswered."""
    with server.client(timeout=2.0) as client:
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


def ready_banner(server: ServerProcess, version: str, recorded: bool = True) -> list[str]:
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
    lines += access_lines(server, version, recorded)
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
            f"  {sample_curl(server.http_url, model, metadata, _inference_headers(server))}",
            f"  {sample_infer(model, metadata, server.http_port)}",
        ]
    lines.append("Press Ctrl+C to stop.")
    return lines


def _inference_headers(server: ServerProcess) -> dict[str, str]:
    access = server.access
    return access.headers("http") if access is not None and "inference" in access.apis else {}


def access_lines(server: ServerProcess, version: str, recorded: bool = True) -> list[str]:
    """What needs the key, the key (printed here once), and what tritonserver ``version`` leaves open.

    ``recorded``: the run's file holds the key, where repogen's commands find it (server/client/access_key.py)."""
    access = server.access
    if access is None:
        return ["  access   nothing restricted (--restrict none): every API answers whoever reaches these ports"]
    lines = [
        f"  access   {', '.join(access.apis)} need the header {HEADER}: {access.token}",
        f"           (repogen's commands here find it; elsewhere export {ENV}=<key>)"
        if recorded
        else f"           (not recorded: {runs_root()} is not yours alone; give repogen's commands {ENV}=<key>)",
    ]
    for protocol, restricted in server.restricts().items():
        if not restricted:
            since = f" ({first_http_release().label} is the first that has)" if protocol == "http" else ""
            lines.append(
                f"  open     over {PROTOCOL_NAMES[protocol]} every API answers without "
                f"the key: tritonserver {version} cannot restrict it{since}"
            )
    return lines
