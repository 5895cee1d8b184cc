"""Liveness by real inference: the probe the deployment files run, derived from each model's config.

tritonserver 2.51 never restarts a dead backend stub and keeps ``/v2/health/live`` and
``/v2/health/ready`` at 200 (docs/known-issues.md), so probes on those endpoints never notice a model
that fails every request; from NGC 25.12 a dead stub fails the ready endpoints
(:func:`repogen.triton.python_backend.ready_detects_dead_stub`), but ``/v2/health/live`` never does,
and only a request shows a model that loads and cannot answer. The Dockerfile's ``HEALTHCHECK`` and
the Kubernetes/KServe ``livenessProbe`` therefore run :mod:`repogen.deploy.probe_check` inside the
container (the image's ``python3``, standard library only): one small request per model, built here from its inputs (the
dims of its first warmup sample when it has one, ``-1`` as 1, a batch of one, zeros and empty
strings), sent to ``/infer``, or ``/generate_stream`` for a decoupled model. The startup probe on
``/v2/health/ready`` stays, so liveness only starts once every model has loaded.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from google.protobuf import json_format

from ..ondisk.reader import BuiltRepository
from ..triton.endpoints import HEALTH_READY
from ..triton.python_backend import ready_detects_dead_stub
from ..triton.releases import Release
from .access_secret import needs_key, probe_key_args
from .probe_check import check

if TYPE_CHECKING:
    from ..server.client.infer import ModelClient
    from ..server.client.states import ModelState

__all__ = [
    "LOADED_NODE_S", "MAX_ELEMENTS", "command", "dead_stub_note", "healthcheck", "liveness_probe", "probe_for",
    "probes", "ready_check", "silent_models", "timeout_s",
]  # fmt: skip

MAX_ELEMENTS = 65536
"""A model whose probe would send more elements than this is left out (the check must stay small)."""
PERIOD_S = 10
FAILURES = 3
_CHECK = Path(__file__).with_name("probe_check.py")


def dead_stub_note(release: Release) -> str:
    """One comment line for the generated files: what on ``release`` notices a dead backend stub."""
    if ready_detects_dead_stub(release):
        return (
            f"on {release.ngc} a dead backend stub also fails the ready endpoints (NGC 25.12+); a model that "
            "cannot answer shows only here."
        )
    return (
        f"a dead backend stub leaves /v2/health/ready at 200 on {release.ngc} (before NGC 25.12): only an "
        "inference notices it."
    )


def _dims(config: Mapping[str, Any], tensor: Mapping[str, Any]) -> list[int]:
    for sample in config.get("model_warmup", [])[:1]:
        warm = sample.get("inputs", {}).get(tensor["name"], {})
        if warm.get("dims"):
            return [int(d) for d in warm["dims"]]
    return [int(d) for d in tensor.get("dims", [])]


def probe_for(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The probe of one model (its config as Triton's JSON, or ``MessageToDict`` of config.pbtxt); None if too big."""
    name = str(config["name"])
    batched = int(config.get("max_batch_size", 0)) > 0
    decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled", False))
    tensors = []
    for tensor in config.get("input", []):
        if tensor.get("optional"):
            continue
        shape = ([1] if batched else []) + [1 if d < 0 else d for d in _dims(config, tensor)]
        count = math.prod(shape)
        if count > MAX_ELEMENTS:
            return None
        datatype = str(tensor.get("data_type", "TYPE_FP32")).removeprefix("TYPE_").replace("STRING", "BYTES")
        value: Any = "" if datatype == "BYTES" else False if datatype == "BOOL" else 0
        tensors.append({"name": tensor["name"], "shape": shape, "datatype": datatype, "data": [value] * count})
    path = f"/v2/models/{quote(name, safe='')}"
    if decoupled:  # HTTP /infer refuses decoupled models; generate_stream takes each input as a JSON value
        body: dict[str, Any] = {t["name"]: t["data"][0] if len(t["data"]) == 1 else t["data"] for t in tensors}
        return {"model": name, "path": f"{path}/generate_stream", "body": body}
    return {"model": name, "path": f"{path}/infer", "body": {"inputs": tensors}}


def silent_models(client: ModelClient, states: Sequence[ModelState]) -> tuple[dict[str, str], dict[str, str]]:
    """The probes sent from here to a running server (``repogen status``): the READY models that do not answer,
    with why (a dead stub stays READY in the index), and those whose probe could not be made because their
    metadata or config could not be read, with the error."""
    found, unprobed = [], {}
    for name in sorted({state.name for state in states if state.state == "READY"}):
        try:
            probe = probe_for({"name": name, **client.metadata(name)["config"]})
        except Exception as exc:  # noqa: BLE001 - whatever failed, the model is listed with it, never skipped
            unprobed[name] = f"its metadata could not be read: {type(exc).__name__}: {exc}".splitlines()[0]
            continue
        if probe is not None:
            found.append(probe)
    return dict(check(f"http://{client.url}", found, headers=client.client.headers)), unprobed


def probes(info: BuiltRepository) -> list[dict[str, Any]]:
    """One probe per model of a built repository that has a config, by name."""
    found = []
    for model in info.models:
        if model.config is None:
            continue
        config = json_format.MessageToDict(model.config, preserving_proto_field_name=True)
        config.setdefault("name", model.name)
        probe = probe_for(config)
        if probe is not None:
            found.append(probe)
    return found


def _source() -> str:
    """probe_check.py without its docstrings and comments: what ``python3 -c`` runs."""
    tree = ast.parse(_CHECK.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            del body[0]
    return ast.unparse(tree)


def command(found: Iterable[dict[str, Any]], port: int, key: Sequence[str] = ()) -> list[str]:
    """The probe as an exec command: ``python3 -c <check> <base url> <probes> [<header> <env var>]``; exit
    status 1 names each model. ``key`` (deploy/access_secret.py): the header and variable of the access key, where
    the requests it sends need it."""
    compact = json.dumps(list(found), separators=(",", ":"), sort_keys=True)
    return ["python3", "-c", _source(), f"http://127.0.0.1:{port}", compact, *key]


#: What any probe may take on a loaded node before it counts as failed: the runtime's exec (or docker exec) and a
#: ``python3`` starting there take seconds on a busy node, where Kubernetes' default of 1 s would fail a healthy
#: server's probes and, for liveness, restart it.
LOADED_NODE_S = 10


def timeout_s(found: list[dict[str, Any]]) -> int:
    """Time for the whole liveness check: starting it on a loaded node, then about 1 s per model for a dead stub
    to be called unhealthy (2 s, with room)."""
    return min(60, LOADED_NODE_S + 2 * len(found))


def liveness_probe(info: BuiltRepository, port: int, apis: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Kubernetes ``livenessProbe`` (container or KServe predictor) running the check; ``apis``: the restricted
    API groups (the requests carry the key where inference is one)."""
    found = probes(info)
    return {
        "exec": {"command": command(found, port, probe_key_args(apis, "inference"))},
        "periodSeconds": PERIOD_S,
        "timeoutSeconds": timeout_s(found),
        "failureThreshold": FAILURES,
    }


def healthcheck(info: BuiltRepository, port: int, apis: tuple[str, ...] = ()) -> str:
    """The Dockerfile's ``HEALTHCHECK`` instruction (exec form: a JSON array, one line)."""
    found = probes(info)
    return (
        f"HEALTHCHECK --interval={PERIOD_S}s --timeout={timeout_s(found)}s --start-period=600s "
        f"--retries={FAILURES} CMD {json.dumps(command(found, port, probe_key_args(apis, 'inference')))}"
    )


def ready_check(port: int, apis: tuple[str, ...]) -> dict[str, Any] | None:
    """Where health needs the key, the startup and readiness probes' ``exec`` (a GET of /v2/health/ready with
    it: Kubernetes' ``httpGet`` cannot send a Secret); None: their ``httpGet`` needs no key."""
    if not needs_key(apis, "health"):
        return None
    return {"command": command([{"path": HEALTH_READY}], port, probe_key_args(apis, "health"))}
