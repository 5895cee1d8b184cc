"""``repogen infer``: one request against a running server, with types taken from the server.

The model's metadata endpoint gives each input's datatype and shape, so the user writes only
values (``a=[[1,2,3]]``, ``n=3``, ``text=hello``, ``x=@x.npy``); a missing batch dimension or
a scalar for a ``[-1, 1]`` input is filled in. Works over HTTP and gRPC with tritonclient.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import RepogenError
from ..triton.dtypes import numpy_dtype
from ..triton.endpoints import GRPC_PORT, HTTP_PORT
from ..triton.shapes import dims_match

__all__ = [
    "DEFAULT_URLS",
    "InferError",
    "InferOutput",
    "InferResult",
    "format_json",
    "format_pretty",
    "parse_input",
    "run_infer",
    "sample_value",
    "to_array",
]

DEFAULT_URLS = {"http": f"127.0.0.1:{HTTP_PORT}", "grpc": f"127.0.0.1:{GRPC_PORT}"}


class InferError(RepogenError):
    """The request could not be made or was refused; the message says what to change."""


@dataclass(frozen=True)
class InferOutput:
    name: str
    datatype: str
    array: np.ndarray


@dataclass(frozen=True)
class InferResult:
    model: str
    version: str
    outputs: tuple[InferOutput, ...]


def sample_value(datatype: str) -> Any:
    """A harmless value of ``datatype`` for generated example requests."""
    if datatype == "BYTES":
        return "hello"
    if datatype == "BOOL":
        return True
    if datatype.startswith("FP") or datatype == "BF16":
        return 1.0
    return 1


# --------------------------------------------------------------------------- inputs


def parse_input(text: str) -> tuple[str, Any]:
    """``name=VALUE``: a JSON value (list, number, string), ``@file.npy``, or else a plain string."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise InferError(f"--input {text!r} is not NAME=VALUE; expected e.g. a=[[1,2,3]], n=3, text=hello or x=@x.npy.")
    if raw.startswith("@"):
        path = Path(raw[1:]).expanduser()
        try:
            return name, np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InferError(f"--input {name}: cannot load {path} as a .npy array ({exc}).") from exc
    try:
        return name, json.loads(raw)
    except ValueError:
        return name, raw


def _fit_shape(name: str, array: np.ndarray, shape: list[int]) -> np.ndarray:
    if dims_match(array.shape, shape):
        return array
    if shape and shape[0] < 0 and dims_match(array.shape, shape[1:]):
        return array[np.newaxis]  # the batch dimension
    filled = [1 if d < 0 else d for d in shape]
    if array.size == math.prod(filled):
        return array.reshape(filled)
    if sum(d < 0 for d in shape) == 1 and array.size % math.prod(filled) == 0:
        return array.reshape([d if d >= 0 else -1 for d in shape])  # e.g. ["a", "b"] for [-1, 1]
    raise InferError(
        f"input {name!r} has shape {shape} (-1: any size), found a value of shape {list(array.shape)}; "
        "pass a nested list with matching dimensions."
    )


def to_array(name: str, value: Any, datatype: str, shape: list[int]) -> np.ndarray:
    """Convert a parsed value to the input's datatype and shape."""
    if datatype == "BYTES":
        raw = np.asarray(value, dtype=object)
        flat = [v if isinstance(v, bytes) else str(v).encode() for v in raw.reshape(-1)]
        array = np.array(flat, dtype=object).reshape(raw.shape)
    else:
        np_dtype = numpy_dtype(datatype)
        if np_dtype is None:
            raise InferError(
                f"input {name!r} is {datatype}, which numpy has no dtype for; send it with tritonclient directly."
            )
        try:
            array = np.asarray(value).astype(np_dtype)
        except (TypeError, ValueError) as exc:
            raise InferError(f"input {name!r} expects {datatype} values, found {value!r} ({exc}).") from exc
    return np.ascontiguousarray(_fit_shape(name, array, shape))


# --------------------------------------------------------------------------- the client


class _Client:
    """The bits of tritonclient ``repogen infer`` needs, the same over HTTP and gRPC."""

    def __init__(self, protocol: str, url: str) -> None:
        if protocol not in DEFAULT_URLS:
            raise InferError(f"--protocol {protocol!r} is not one of http, grpc.")
        self.protocol = protocol
        self.url = url.split("://", 1)[-1].rstrip("/")
        if protocol == "http":
            import tritonclient.http as module
        else:
            import tritonclient.grpc as module  # type: ignore[no-redef]
        self.module: Any = module
        try:
            self.client: Any = module.InferenceServerClient(self.url)
        except Exception as exc:
            raise InferError(f"--url {url!r} is not a usable {protocol} address ({exc}); expected HOST:PORT.") from exc

    def _json(self, method: str, *args: Any) -> Any:
        call = getattr(self.client, method)
        return call(*args) if self.protocol == "http" else call(*args, as_json=True)

    def check_live(self) -> None:
        try:
            live = self.client.is_server_live()
        except Exception as exc:
            live, reason = False, f"{type(exc).__name__}: {exc}".rstrip(": ")
        else:
            reason = "it answered not live"
        if not live:
            raise InferError(
                f"cannot reach a Triton server at {self.url} over {self.protocol} ({reason}). Start one with "
                f"`repogen serve DIR`, or pass --url HOST:PORT (default {DEFAULT_URLS[self.protocol]}) and --protocol."
            )

    def models(self) -> list[str]:
        index = self._json("get_model_repository_index")
        entries = index if isinstance(index, list) else index.get("models", [])
        return sorted(str(m.get("name")) for m in entries)

    def metadata(self, model: str) -> dict[str, Any]:
        from tritonclient.utils import InferenceServerException

        try:
            data: dict[str, Any] = self._json("get_model_metadata", model)
            config = self._json("get_model_config", model)
        except InferenceServerException as exc:
            served = ", ".join(self.models()) or "none"
            raise InferError(
                f"model {model!r} is not available at {self.url} ({exc.message()}); served models: {served}."
            ) from exc
        data["config"] = config.get("config", config) if self.protocol == "grpc" else config
        return data

    def infer(self, model: str, arrays: dict[str, tuple[str, np.ndarray]], outputs: list[str]) -> InferResult:
        from tritonclient.utils import InferenceServerException

        tensors = []
        for name, (datatype, array) in arrays.items():
            tensor = self.module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        requested = [self.module.InferRequestedOutput(name) for name in outputs] or None
        try:
            result = self.client.infer(model, tensors, outputs=requested)
        except InferenceServerException as exc:
            raise InferError(f"model {model!r} rejected the request: {exc.message()}") from exc
        response = result.get_response()
        if self.protocol == "http":
            listed = [(o["name"], o["datatype"]) for o in response["outputs"]]
            version = str(response.get("model_version", ""))
        else:
            listed = [(o.name, o.datatype) for o in response.outputs]
            version = str(response.model_version)
        return InferResult(model, version, tuple(InferOutput(n, d, result.as_numpy(n)) for n, d in listed))

    def close(self) -> None:
        self.client.close()


def run_infer(
    model: str, inputs: list[str], *, url: str | None = None, protocol: str = "http", outputs: tuple[str, ...] = ()
) -> InferResult:
    """Send one request built from ``NAME=VALUE`` strings; datatypes and shapes come from the server."""
    parsed = dict(parse_input(text) for text in inputs)
    client = _Client(protocol, url or DEFAULT_URLS[protocol])
    try:
        client.check_live()
        metadata = client.metadata(model)
        specs = {t["name"]: t for t in metadata.get("inputs", [])}
        optional = {i["name"] for i in metadata["config"].get("input", []) if i.get("optional")}
        unknown = sorted(set(parsed) - set(specs))
        if unknown:
            raise InferError(
                f"model {model!r} has no input {', '.join(map(repr, unknown))}; its inputs are "
                f"{', '.join(specs) or 'none'}."
            )
        missing = [n for n in specs if n not in parsed and n not in optional]
        if missing:
            hints = " ".join(f"--input {n}=..." for n in missing)
            raise InferError(f"model {model!r} needs input(s) {', '.join(missing)}; add {hints}.")
        arrays = {
            name: (specs[name]["datatype"], to_array(name, value, specs[name]["datatype"], _shape(specs[name])))
            for name, value in parsed.items()
        }
        output_names = {o["name"] for o in metadata.get("outputs", [])}
        unknown_out = [o for o in outputs if o not in output_names]
        if unknown_out:
            raise InferError(
                f"model {model!r} has no output {', '.join(map(repr, unknown_out))}; its outputs are "
                f"{', '.join(sorted(output_names))}."
            )
        return client.infer(model, arrays, list(outputs))
    finally:
        client.close()


def _shape(spec: dict[str, Any]) -> list[int]:
    return [int(d) for d in spec.get("shape", [])]


# --------------------------------------------------------------------------- printing


def _plain(value: Any) -> Any:
    """Nested lists with ``bytes`` decoded (UTF-8, undecodable bytes escaped) for printing and JSON."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return value


def format_pretty(result: InferResult) -> str:
    lines = [f"{result.model} (version {result.version or '?'})"]
    for out in result.outputs:
        lines.append(f"{out.name}  {out.datatype}  shape {list(out.array.shape)}")
        if out.array.dtype == object:
            values = json.dumps(_plain(out.array.tolist()), ensure_ascii=False)
        else:
            values = np.array2string(out.array, separator=", ", threshold=200)
        lines.extend(f"  {line}" for line in values.splitlines())
    return "\n".join(lines)


def format_json(result: InferResult) -> str:
    """KServe v2-like response with nested ``data`` (row-major, shaped) for scripts."""
    outputs = [
        {"name": o.name, "datatype": o.datatype, "shape": list(o.array.shape), "data": _plain(o.array.tolist())}
        for o in result.outputs
    ]
    return json.dumps({"model_name": result.model, "model_version": result.version, "outputs": outputs})
