"""One inference request over HTTP or gRPC with tritonclient, returning numpy arrays.

Tests parametrize over both protocols with the same call so each feature is proven on both.
"""

from __future__ import annotations

import queue
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

PROTOCOLS = ("http", "grpc")

__all__ = ["PROTOCOLS", "InferenceServerException", "expected_status", "infer", "make_client", "stream"]


def expected_status(protocol: str, code: str) -> str:
    """What ``InferenceServerException.status()`` says for an error of ``code`` (runtime/errors.py's names) on the
    release under test."""
    from repogen.testing.server_under_test import release_under_test
    from repogen.triton.error_codes import GRPC_STATUS, http_status

    if protocol == "http":
        return str(http_status(code, release_under_test()))
    return f"StatusCode.{GRPC_STATUS[code]}"


def make_client(protocol: str, server: Any) -> Any:
    """A tritonclient client of ``protocol`` for a started ``TritonServer``."""
    if protocol == "http":
        return httpclient.InferenceServerClient(server.http_url)
    if protocol == "grpc":
        return grpcclient.InferenceServerClient(server.grpc_url)
    raise ValueError(f"protocol must be one of {PROTOCOLS}, found {protocol!r}")


def infer(
    protocol: str,
    server: Any,
    model: str,
    inputs: dict[str, np.ndarray],
    outputs: list[str] | None = None,
    *,
    parameters: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    model_version: str = "",
) -> dict[str, np.ndarray]:
    """Send one request; raise ``InferenceServerException`` on an error response."""
    module: Any = httpclient if protocol == "http" else grpcclient
    client = make_client(protocol, server)
    try:
        tensors = _inputs(module, inputs)
        requested = [module.InferRequestedOutput(name) for name in outputs] if outputs else None
        result = client.infer(
            model, tensors, model_version=model_version, outputs=requested, parameters=parameters, headers=headers
        )
        names = outputs or [o["name"] for o in _output_list(result, protocol)]
        return {name: result.as_numpy(name) for name in names}
    finally:
        client.close()


def _inputs(module: Any, inputs: dict[str, np.ndarray]) -> list[Any]:
    tensors = []
    for name, array in inputs.items():
        tensor = module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    return tensors


def stream(
    server: Any, model: str, inputs: dict[str, np.ndarray], *, timeout: float = 30.0, outputs: list[str] | None = None
) -> list[dict[str, np.ndarray] | InferenceServerException]:
    """Every response of a decoupled model over a gRPC stream, in order, until its final flag; ``outputs``: the ones
    asked for (default: all).

    An error response ends the list (as the exception the client received).
    """
    events: queue.Queue[Any] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    received: list[dict[str, np.ndarray] | InferenceServerException] = []
    ended = False
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        requested = [grpcclient.InferRequestedOutput(name) for name in outputs] if outputs else None
        client.async_stream_infer(
            model, _inputs(grpcclient, inputs), outputs=requested, enable_empty_final_response=True
        )
        while True:
            event = events.get(timeout=timeout)
            if isinstance(event, InferenceServerException):
                received.append(event)
                break
            response = event.get_response()
            if response.outputs:
                received.append({o.name: event.as_numpy(o.name) for o in response.outputs})
            if response.parameters["triton_final_response"].bool_param:
                ended = True
                break
    finally:
        # Only a stream left early is cancelled: on 2.51 a cancel sent after the final flag can keep the model
        # from unloading until the server's exit timeout (30 s at shutdown).
        client.stop_stream(cancel_requests=not ended)
        client.close()
    return received


def _output_list(result: Any, protocol: str) -> list[dict[str, Any]]:
    response = result.get_response()
    if protocol == "http":
        return list(response["outputs"])
    return [{"name": o.name} for o in response.outputs]
