"""Triton's network endpoints: default ports and the HTTP paths repogen uses (KServe v2 protocol).

``repogen serve`` binds these ports by default, ``repogen infer`` connects to them, and the
deployment files publish and probe them.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_PORTS",
    "GRPC_PORT",
    "HEALTH_LIVE",
    "HEALTH_READY",
    "HTTP_PORT",
    "METRICS_PORT",
    "METRICS_PATH",
    "NOT_EXPLICIT_ANSWER",
    "infer_path",
]

HTTP_PORT, GRPC_PORT, METRICS_PORT = 8000, 8001, 8002
DEFAULT_PORTS: dict[str, int] = {"http": HTTP_PORT, "grpc": GRPC_PORT, "metrics": METRICS_PORT}
"""Endpoint name → tritonserver's default port (``--http-port``, ``--grpc-port``, ``--metrics-port``)."""

HEALTH_READY = "/v2/health/ready"
"""200 once the server and every model it loads at start are ready."""
HEALTH_LIVE = "/v2/health/live"
"""200 while the server process answers."""
METRICS_PATH = "/metrics"

NOT_EXPLICIT_ANSWER = "explicit model load / unload is not allowed"
"""How tritonserver answers a load or unload request unless started with ``--model-control-mode=explicit``
(503 / UNAVAILABLE, "... if polling is enabled" even in mode NONE, where nothing polls)."""


def infer_path(model: str) -> str:
    return f"/v2/models/{model}/infer"
