"""The ``TritonPythonModel`` behind every generated ``model.py``.

Per request it builds a PyTriton-style ``Request`` (numeric inputs through DLPack, without a
copy; BYTES and BOOL through ``as_numpy``), hands the list to the user's callable and turns each
result into a response. A failing callable becomes an error response; the model keeps serving.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import traceback
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

from .conversion import AS_NUMPY_TYPES, OutputPlan
from .errors import InferenceError
from .payload import load_payload
from .request import Request


def _instance_index(instance_name: str) -> int:
    """Triton names instances ``<group>_<k>``; ``k`` picks the callable of ``infer_func=[...]``."""
    tail = instance_name.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _error_message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class TritonPythonModel:
    """Serves one instance of a repogen-built model."""

    def initialize(self, args: dict[str, str]) -> None:
        self._model = args["model_name"]
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        meta, payload = load_payload(version_dir, self._model)
        funcs = payload["infer_funcs"]
        self._infer = funcs[_instance_index(args["model_instance_name"]) % len(funcs)]
        config = json.loads(args["model_config"])
        batched = int(config.get("max_batch_size", 0)) > 0
        strict = bool(meta.get("strict", False))
        self._as_numpy = frozenset(t["name"] for t in config.get("input", []) if t["data_type"] in AS_NUMPY_TYPES)
        self._outputs = [
            OutputPlan(self._model, t["name"], t["data_type"], [int(d) for d in t["dims"]], batched, strict)
            for t in config.get("output", [])
        ]
        self._declared = frozenset(plan.name for plan in self._outputs)
        self._strict = strict
        self._loop: asyncio.AbstractEventLoop | None = None

    def execute(self, requests: list[Any]) -> list[Any]:
        try:
            batch = [self._request(r) for r in requests]
            results = self._infer(batch)
            if inspect.isawaitable(results):
                results = self._run(results)
            if not isinstance(results, (list, tuple)) or len(results) != len(requests):
                raise InferenceError(self._shape_of_results_message(results, len(requests)))
        except Exception as exc:  # the callable's failure is the clients' answer, not the server's
            self._log_failure(exc)
            error = pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(_error_message(exc)))
            return [error] * len(requests)
        return [self._response(result) for result in results]

    def finalize(self) -> None:
        if self._loop is not None:
            self._loop.close()

    # -- per request -------------------------------------------------------------------------------

    def _request(self, request: Any) -> Request:
        as_numpy = self._as_numpy
        data = {}
        for tensor in request.inputs():
            name = tensor.name()
            data[name] = tensor.as_numpy() if name in as_numpy else np.from_dlpack(tensor)
        return Request(data, source=request)

    def _response(self, result: Any) -> Any:
        try:
            tensors = [pb_utils.Tensor(plan.name, plan.convert(value)) for plan, value in self._pairs(result)]
        except Exception as exc:
            self._log_failure(exc)
            return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(_error_message(exc)))
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def _pairs(self, result: Any) -> list[tuple[OutputPlan, Any]]:
        if isinstance(result, dict):
            if self._strict and not result.keys() <= self._declared:
                extra = sorted(set(result) - self._declared)
                raise InferenceError(
                    f"model '{self._model}' returned undeclared outputs {extra}; declared: "
                    f"{sorted(self._declared)} (strict=True)"
                )
            pairs = []
            for plan in self._outputs:
                if plan.name not in result:
                    raise InferenceError(
                        f"model '{self._model}' did not return output '{plan.name}'; it returned {sorted(result)}"
                    )
                pairs.append((plan, result[plan.name]))
            return pairs
        if isinstance(result, (list, tuple)):
            if len(result) != len(self._outputs):
                raise InferenceError(
                    f"model '{self._model}' returned {len(result)} outputs as a sequence; expected "
                    f"{len(self._outputs)} in the declared order {[p.name for p in self._outputs]}"
                )
            return list(zip(self._outputs, result, strict=True))
        raise InferenceError(
            f"model '{self._model}' returned {type(result).__name__} for a request; expected a dict of "
            "output name to array"
        )

    # -- rarely taken paths ------------------------------------------------------------------------

    def _run(self, awaitable: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def _shape_of_results_message(self, results: Any, expected: int) -> str:
        if isinstance(results, dict):
            return (
                f"model '{self._model}' returned a dict; an undecorated infer_func receives a list of "
                f"{expected} request(s) and must return a list with one dict per request (or use @batch)"
            )
        found = len(results) if isinstance(results, (list, tuple)) else type(results).__name__
        return f"model '{self._model}' returned {found} result(s) for {expected} request(s); return one per request"

    def _log_failure(self, exc: BaseException) -> None:
        logger = getattr(pb_utils, "Logger", None)
        if logger is not None:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            logger.log_error(f"model '{self._model}': infer_func raised\n{text}")
