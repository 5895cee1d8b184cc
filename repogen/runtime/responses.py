"""The output side of a model instance: the callable's results, and its failures, made into python_backend's
responses.

``TritonPythonModel`` (triton_model.py) is a :class:`Responses`: generated ``model.py`` files and fused pipelines
call ``response``, ``responses`` and ``output_pairs`` on it (the fast path's public surface). Each declared output
has its ``OutputPlan`` (conversion.py): a result of exactly the declared outputs, arrays of the declared dtypes,
takes the hot path; anything else is matched, converted and checked output by output, the failure naming which.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

from .conversion import OutputPlan, output_pairs
from .errors import INTERNAL, PyTritonUnrecoverableError, error_code
from .failures import error_message, error_response, log, log_failure, out_of_gpu_memory
from .request import Request, StepFailure
from .requested import asked_for
from .tensors import backend_tensor


class Responses:
    """Responses from results, for one instance; what it reads is set by ``TritonPythonModel.configure``."""

    _model: str
    output_plans: list[OutputPlan]
    _declared: frozenset[str]
    _order: tuple[str, ...]
    _output_count: int
    _strict: bool
    _departure: Any
    """How a GPU instance's outputs leave, a batch at a time (runtime/transfers.py); None elsewhere."""
    _failures: Any  # FailureCounter, None where a fused model counts its step's failures
    _stub: Any
    _unstoppable: str | None
    _decoupled: bool
    placement: Any
    stopped: str | None
    batch_call: Any

    def responses(self, results: list[Any], requests: list[Request] | None = None) -> list[Any]:
        """One response per result, with the outputs its request's client asked for (runtime/requested.py); a GPU
        instance's outputs leave together (runtime/transfers.py)."""
        asked, results = asked_for(results, requests, self._order) if requests is not None else (None, results)
        if self._departure is not None:
            try:
                results = self._departure.prepare(results, self._converted)
            except BaseException as exc:  # a copy the device refused: every request of the batch is answered so
                return self.failures(exc, len(results))
        if asked is not None:
            return [self.response(result, names) for result, names in zip(results, asked, strict=True)]
        return [self.response(result) for result in results]

    def _converted(self, result: Any) -> dict[str, Any] | None:
        """A result's outputs as its response would send them, None where it cannot (the response says why)."""
        try:
            if type(result) is dict and len(result) == self._output_count:
                return {plan.name: plan.convert(result[plan.name]) for plan in self.output_plans}
            return {plan.name: plan.convert(value) for plan, value in self.output_pairs(result)}
        except Exception:
            return None

    def response(self, result: Any, names: frozenset[str] | None = None) -> Any:
        """``result``'s response; ``names``: the outputs its client asked for where not all (the others are gone)."""
        try:
            if type(result) is dict and len(result) == self._output_count and names is None:
                try:  # the hot path: exactly the declared outputs
                    tensors = []
                    for plan in self.output_plans:
                        value = plan.convert(result[plan.name])
                        if type(value) is np.ndarray:
                            tensors.append(pb_utils.Tensor(plan.name, value))
                        else:  # a framework's tensor, on the CPU or a GPU
                            tensors.append(backend_tensor(pb_utils, plan.name, value))
                    return pb_utils.InferenceResponse(tensors)
                except Exception:  # a name is off or a value does not convert: the slow path says which
                    pass
            if type(result) is StepFailure:  # a fused pipeline's step failed this request
                return self.failure(result.exc)
            tensors = [self._tensor(plan, value) for plan, value in self.output_pairs(result, names)]
        except BaseException as exc:  # as in execute
            return self.failure(exc)
        return pb_utils.InferenceResponse(tensors)

    @staticmethod
    def _tensor(plan: OutputPlan, value: Any) -> Any:
        array = plan.convert(value)
        try:
            return backend_tensor(pb_utils, plan.name, array)
        except Exception as exc:  # e.g. an object array of ints for a BYTES output
            raise plan.unconvertible(value, exc) from None

    def output_pairs(self, result: Any, names: frozenset[str] | None = None) -> list[tuple[OutputPlan, Any]]:
        """Each declared output's plan (those in ``names``, where given) beside the value ``result`` holds for it (a
        dict, or a sequence in order)."""
        plans = self.output_plans if names is None else [plan for plan in self.output_plans if plan.name in names]
        return output_pairs(self._model, plans, self._declared, self._strict, result)

    # -- failures: the error responses -----------------------------------------------------------

    def failure(self, exc: BaseException, requests: int = 1) -> Any:
        """The error response for ``exc`` to one of ``requests`` requests, counted once for all of them (each of the
        others needs an answer of its own: :meth:`failures`); an unrecoverable one stops the server."""
        return error_response(*self._failed(exc, requests))

    def failures(self, exc: BaseException, requests: int) -> list[Any]:
        """One error response for ``exc`` to each of ``requests`` requests, logged and counted once.

        Each is an object of its own: one response object answering two requests of a batch kills tritonserver
        2.51 (SIGSEGV in libtriton_python.so's execute, measured with a failing ``@batch`` model).
        """
        message, code = self._failed(exc, requests)
        return [error_response(message, code) for _ in range(requests)]

    def _failed(self, exc: BaseException, requests: int) -> tuple[str, str]:
        """``exc`` logged and counted for ``requests`` requests; the message and code that answer each."""
        log_failure(self._model, exc)
        if self._failures is not None:
            self._failures.add(requests)
        if isinstance(exc, PyTritonUnrecoverableError) and self.stopped is None:
            try:  # carried where the model's code names the error (emit/vendoring.py)
                from .unrecoverable import stop
            except ModuleNotFoundError as missing:  # code the build did not see raise it: answered as any error
                if missing.name != f"{__package__}.unrecoverable":
                    raise
                log("log_error", f"model '{self._model}': {type(exc).__name__} from code the build did not see "
                    "name it: the server goes on; name the error in the model's code and rebuild")  # fmt: skip
            else:
                stop(self, exc)  # PyTriton's contract: this instance stops serving, and the server stops
        if out_of_gpu_memory(exc):  # what the failed batch left cached is given back: the next one may fit
            try:  # carried where the model can meet a framework's tensors (emit/vendoring.py); elsewhere, as any error
                from .devices import free_gpu_caches, out_of_gpu_memory_message
            except ModuleNotFoundError as missing:
                if missing.name != f"{__package__}.devices":
                    raise
            else:
                free_gpu_caches()
                return out_of_gpu_memory_message(self._model, self.placement.device, exc), INTERNAL
        return error_message(exc), error_code(exc)

    def _refuse(self, requests: list[Any]) -> list[Any] | None:
        """After an unrecoverable error this instance answers nothing but that (runtime/unrecoverable.py)."""
        from .unrecoverable import refuse

        return refuse(self, requests)
