"""``repogen infer``: one request against a running server, with types taken from the server.

The model's metadata gives each input's datatype and shape, so the user writes only values
(:mod:`repogen.server.client.values`). Works over HTTP (:mod:`repogen.server.client.kserve_http`, the standard
library's) and gRPC (tritonclient's); a decoupled (streaming)
model answers over a gRPC stream, each response printed as it arrives. Outputs are listed in the
order the model declares them, whatever order the server sent them in.
"""

from __future__ import annotations

import json
import queue
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import UsageError
from ...triton.endpoints import GRPC_PORT, HTTP_PORT
from .access_key import KeyedClient, find_token, headers, refusal_error, refused
from .values import InferError, parse_input, parse_inputs, sample_value, to_array

__all__ = [
    "DEFAULT_URLS",
    "InferError",
    "InferOutput",
    "InferResult",
    "ModelClient",
    "format_json",
    "format_pretty",
    "parse_input",
    "run_infer",
    "sample_value",
    "to_array",
]

DEFAULT_URLS = {"http": f"127.0.0.1:{HTTP_PORT}", "grpc": f"127.0.0.1:{GRPC_PORT}"}
URL_ENV = "REPOGEN_URL"


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


# The runtime's answer when the callable failed ends "(at app.py:13, in f)" (runtime.triton_model); 2.51 also
# answers it 500 / INTERNAL, where the server's own refusals (shape, dtype, batch size) are 400 / INVALID_ARGUMENT.
_FAILED_AT = re.compile(r"\(at [^()]+:\d+, in [\w<>.]+\)$")
_SERVER_ERRORS = ("500", "StatusCode.INTERNAL")


def error_line(model: str, message: str, status: str) -> str:
    """Words that match what happened: the model failed the request, or the server refused it."""
    message = message.strip()
    if _FAILED_AT.search(message) or status in _SERVER_ERRORS:
        return f"model {model!r} failed the request: {message}. The server log has the traceback."
    return f"model {model!r} refused the request: {message}"


class ModelClient:
    """The bits of a Triton client ``infer``, ``perf``, ``status`` and ``load`` need, the same over HTTP and gRPC.

    ``errors``: what the client raises when the server answers with an error (``message()``, ``status()``).

    Every call carries the access key when one is found (``token``, else ``$REPOGEN_ACCESS_TOKEN``, else
    the ``repogen serve`` run on that port: :mod:`repogen.server.client.access_key`).
    """

    def __init__(self, protocol: str, url: str | None = None, token: str | None = None) -> None:
        if protocol not in DEFAULT_URLS:
            raise InferError(f"--protocol {protocol!r} is not one of http, grpc.")
        self.protocol = protocol
        self.url = (url or DEFAULT_URLS[protocol]).split("://", 1)[-1].rstrip("/")
        self.token, self.token_source = find_token(token, self.url)
        try:
            raw, self.errors = self._connect()
            self.client: Any = KeyedClient(raw, headers(self.token, protocol))
        except Exception as exc:
            raise InferError(f"--url {url!r} is not a usable {protocol} address ({exc}); expected HOST:PORT.") from exc

    def _connect(self) -> tuple[Any, tuple[type[Any], ...]]:
        """The protocol's client and what it raises when the server answers with an error."""
        if self.protocol == "http":
            from .kserve_http import HttpClient, ServerError

            return HttpClient(self.url), (ServerError,)
        import tritonclient.grpc
        from tritonclient.utils import InferenceServerException

        return tritonclient.grpc.InferenceServerClient(self.url), (InferenceServerException,)

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def _json(self, method: str, *args: Any) -> Any:
        call = getattr(self.client, method)
        try:
            return call(*args) if self.protocol == "http" else call(*args, as_json=True)
        except self.errors as exc:
            self.check_refused(exc)
            raise

    def check_refused(self, exc: Any) -> None:
        """Raise what to do if ``exc`` (one of ``errors``) is the server refusing a request without the key."""
        message = exc.message() or str(exc)
        if refused(message):
            raise InferError(refusal_error(self.url, self.token_source, message)) from exc

    def server_version(self) -> str:
        """tritonserver's version (``"2.51.0"``), from the server metadata."""
        return str(self._json("get_server_metadata").get("version", ""))

    def check_live(self) -> None:
        try:
            live = self.client.is_server_live()
        except self.errors as exc:
            self.check_refused(exc)
            live, reason = False, f"{type(exc).__name__}: {exc}".rstrip(": ")
        except Exception as exc:
            live, reason = False, f"{type(exc).__name__}: {exc}".rstrip(": ")
        else:  # over HTTP, a refused health check (403) reads as "not live"
            reason = "it answered not live" + ("" if self.token else ", or refused a request without the access key")
        if not live:
            raise InferError(
                f"cannot reach a Triton server at {self.url} over {self.protocol} ({reason}). Start one with "
                f"`repogen serve DIR`, or pass --url HOST:PORT (or set ${URL_ENV}; default "
                f"{DEFAULT_URLS[self.protocol]}) and --protocol."
            )

    def index(self) -> list[dict[str, Any]]:
        index = self._json("get_model_repository_index")
        return list(index if isinstance(index, list) else index.get("models", []))

    def models(self) -> list[str]:
        return sorted(str(m.get("name")) for m in self.index())

    def metadata(self, model: str) -> dict[str, Any]:
        """The model's metadata, with its config under ``"config"``."""
        try:
            data: dict[str, Any] = self._json("get_model_metadata", model)
            config = self._json("get_model_config", model)
        except self.errors as exc:
            try:
                served = ", ".join(self.models()) or "none"
            except InferError:  # the index is behind the key, which this client lacks
                served = "not listed (the repository index needs the access key)"
            raise InferError(
                f"model {model!r} is not available at {self.url} ({exc.message()}); served models: {served}."
            ) from exc
        data["config"] = config.get("config", config) if self.protocol == "grpc" else config
        return data

    def statistics(self) -> list[dict[str, Any]]:
        stats = self._json("get_inference_statistics")
        return list(stats.get("model_stats", []))

    def _tensors(self, arrays: dict[str, tuple[str, np.ndarray]], outputs: list[str]) -> tuple[list[Any], Any]:
        """tritonclient.grpc's inputs and requested outputs."""
        import tritonclient.grpc as grpc

        tensors = []
        for name, (datatype, array) in arrays.items():
            tensor = grpc.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        return tensors, [grpc.InferRequestedOutput(name) for name in outputs] or None

    def infer(
        self, model: str, arrays: dict[str, tuple[str, np.ndarray]], outputs: list[str], timeout: float | None = None
    ) -> InferResult:
        """One request; ``timeout`` seconds: over gRPC the call's deadline, which Triton sees as a cancellation."""
        try:
            if self.protocol == "http":
                answer, found = self.client.infer(model, arrays, outputs)
                return _result(model, str(answer.get("model_version", "")), answer["outputs"], found)
            tensors, requested = self._tensors(arrays, outputs)
            options = {"client_timeout": timeout} if timeout is not None else {}
            result = self.client.infer(model, tensors, outputs=requested, **options)
        except self.errors as exc:
            self.check_refused(exc)
            if timeout is not None and "DEADLINE_EXCEEDED" in str(exc.status()):
                raise InferError(
                    f"model {model!r} did not answer within {timeout:g} s; the request was cancelled."
                ) from None
            raise InferError(error_line(model, exc.message(), str(exc.status()))) from exc
        return _grpc_result(model, result)

    def stream(
        self, model: str, arrays: dict[str, tuple[str, np.ndarray]], outputs: list[str], timeout: float | None = None
    ) -> Iterator[InferResult]:
        """A decoupled model's responses as they arrive (gRPC stream), until its final flag.

        Left before that (Ctrl+C, ``timeout`` seconds passed, the caller stopped reading), the request is
        cancelled on the server, whose repogen models then stop at their next step.
        """
        responses: queue.Queue[tuple[Any, Any]] = queue.Queue()
        tensors, requested = self._tensors(arrays, outputs)
        deadline = None if timeout is None else time.monotonic() + timeout
        self.client.start_stream(callback=lambda result, error: responses.put((result, error)))
        ended = False
        try:
            self.client.async_stream_infer(model, tensors, outputs=requested, enable_empty_final_response=True)
            while True:
                try:
                    wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                    result, error = responses.get(timeout=wait)
                except queue.Empty:
                    raise InferError(
                        f"model {model!r} did not finish its stream within {timeout:g} s; the request was cancelled."
                    ) from None
                if error is not None:
                    ended = True
                    raise InferError(f"model {model!r} failed the stream: {error.message()}")
                response = result.get_response()
                final = response.parameters.get("triton_final_response")
                ended = final is not None and final.bool_param
                if response.outputs:
                    yield _grpc_result(model, result)
                if ended:
                    return
        finally:
            self.client.stop_stream(cancel_requests=not ended)


def _result(model: str, version: str, listed: list[dict[str, Any]], arrays: dict[str, np.ndarray]) -> InferResult:
    outputs = tuple(InferOutput(o["name"], o["datatype"], arrays[o["name"]]) for o in listed)
    return InferResult(model, version, outputs)


def _grpc_result(model: str, result: Any) -> InferResult:
    response = result.get_response()
    listed = [{"name": o.name, "datatype": o.datatype} for o in response.outputs]
    return _result(model, str(response.model_version), listed, {o["name"]: result.as_numpy(o["name"]) for o in listed})


def _in_declared_order(result: InferResult, declared: list[str]) -> InferResult:
    rank = {name: index for index, name in enumerate(declared)}
    ordered = sorted(result.outputs, key=lambda o: rank.get(o.name, len(rank)))
    return InferResult(result.model, result.version, tuple(ordered))


def prepare(
    client: ModelClient, model: str, inputs: list[str], outputs: tuple[str, ...] = (), *, require_all: bool = True
) -> dict[str, Any]:
    """Check ``inputs`` (``NAME=VALUE``) and ``outputs`` against the model; its metadata plus the typed arrays.

    ``require_all``: every required input must be given (``perf`` fills in the others itself).
    """
    parsed = parse_inputs(inputs)
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
    if missing and require_all:
        hints = " ".join(f"--input {n}=..." for n in missing)
        raise InferError(f"model {model!r} needs input(s) {', '.join(missing)}; add {hints}.")
    declared = [o["name"] for o in metadata.get("outputs", [])]
    unknown_out = [o for o in outputs if o not in declared]
    if unknown_out:
        raise InferError(
            f"model {model!r} has no output {', '.join(map(repr, unknown_out))}; its outputs are {', '.join(declared)}."
        )
    metadata["arrays"] = {
        name: (specs[name]["datatype"], to_array(name, value, specs[name]["datatype"], _shape(specs[name])))
        for name, value in parsed.items()
    }
    return metadata


def is_decoupled(metadata: dict[str, Any]) -> bool:
    return bool(metadata["config"].get("model_transaction_policy", {}).get("decoupled"))


def run_infer(
    model: str,
    inputs: list[str],
    *,
    url: str | None = None,
    protocol: str = "http",
    outputs: tuple[str, ...] = (),
    stream: bool = False,
    on_response: Callable[[InferResult], None] | None = None,
    token: str | None = None,
    timeout: float | None = None,
) -> InferResult | None:
    """Send one request built from ``NAME=VALUE`` strings; datatypes and shapes come from the server.

    ``stream`` (gRPC) sends it to a decoupled model and hands each response to ``on_response`` as it
    arrives; then ``None`` is returned. ``timeout`` (seconds) bounds the whole request; over gRPC a request
    given up on is cancelled on the server (Ctrl+C too); ``timeout`` needs gRPC.
    """
    if stream and protocol != "grpc":
        raise UsageError(
            "--stream needs gRPC (Triton streams decoupled responses over gRPC only); drop --protocol http."
        )
    if timeout is not None and protocol != "grpc":
        raise UsageError(
            "--timeout needs gRPC, whose deadline cancels the request on the server; drop --protocol http."
        )
    with ModelClient(protocol, url, token) as client:
        metadata = prepare(client, model, inputs, outputs)
        declared = [o["name"] for o in metadata.get("outputs", [])]
        decoupled = is_decoupled(metadata)
        if decoupled and not stream:
            raise InferError(
                f"model {model!r} is decoupled: it streams its responses, which only a gRPC stream receives. "
                f"Add --stream: repogen infer {model} --stream ..."
            )
        if stream:
            if not decoupled:
                raise InferError(f"model {model!r} is not decoupled: it sends one response; drop --stream.")
            for response in client.stream(model, metadata["arrays"], list(outputs), timeout):
                (on_response or (lambda r: None))(_in_declared_order(response, declared))
            return None
        return _in_declared_order(client.infer(model, metadata["arrays"], list(outputs), timeout), declared)


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


def format_pretty(result: InferResult, title: str | None = None) -> str:
    lines = [title or f"{result.model} (version {result.version or '?'})"]
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
