"""A fused ensemble (``fuse=True``): its steps run in this process, in dependency order.

Triton pays a server → stub round trip for every Python step of an ensemble; here the fused model's
callable is the whole pipeline. Each step is set up as the server would set it up alone (its
config, callables, strictness, shipped files under ``steps/<model>/<version>/files``) and its
results go through the same conversion, so each ensemble tensor holds exactly what Triton would
have passed on: the producing step's declared dtype. A request a step fails is answered with that
step's error and leaves the pipeline; the others go on. Arrays pass from step to step without a
copy, except that a step gets its own copy of a tensor that a later step or the pipeline's answer
still reads: Triton hands every consumer its own, so a step writing into its input changes nothing
else there either. Tensors stay as the step made them, a framework's on its device too; a step that
declared another kind of tensors (numpy, or ``tensors="torch"``) gets each input as it would from
Triton: numpy in host memory, or its framework's tensor.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .contract import NUMPY, STEPS_DIR, read_again
from .decorator_base import request_size
from .errors import CLIENT_FAULTS, error_code
from .request import Request, StepFailure
from .tensors import framework_of, host_array


class _Step:
    def __init__(self, model: Any, input_map: dict[str, str], output_map: dict[str, str]):
        self.model = model  # a configured TritonPythonModel: the step as it would serve alone
        self.inputs = sorted(input_map.items())  # (step input, ensemble tensor)
        self.outputs = sorted(output_map.items())  # (step output, ensemble tensor)
        self.shared: frozenset[str] = frozenset()  # ensemble tensors read again after this step: copied for it
        self.adopt: Any = None  # where a step of the pipeline takes other tensors than numpy: adopted, its placement

        self.call = model.batch_call  # the function under @batch, when the step can take the straight line
        # (output, ensemble tensor, its plan): the plan's accepts() is the fast lane's rule
        self.checks = [(plan.name, dict(self.outputs).get(plan.name), plan) for plan in model.output_plans]

    def data(self, pool: dict[str, Any]) -> dict[str, Any]:
        """This step's inputs from the request's tensors ``pool``."""
        if self.adopt is not None:
            adopt, shared = self.adopt, self.shared
            return {
                name: adopt(copied(pool[tensor]) if tensor in shared else pool[tensor])
                for name, tensor in self.inputs
                if tensor in pool
            }
        if self.shared:
            return {name: _copy(pool[tensor], tensor in self.shared) for name, tensor in self.inputs if tensor in pool}
        return {name: pool[tensor] for name, tensor in self.inputs if tensor in pool}

    def one(self, pool: dict[str, Any]) -> StepFailure | None:
        """Run this step for one request whose tensors are ``pool``; add its outputs there, or fail."""
        data = self.data(pool)
        if self.adopt is not None:
            arrive(self.model.placement, [data])
        try:
            result = self.call(**data)
        except BaseException as exc:  # the step's failure is this request's answer
            return StepFailure(exc)
        return self.absorb(pool, result, request_size(data))

    def absorb(self, pool: dict[str, Any], result: Any, rows: int) -> StepFailure | None:
        """Add what this step's ``@batch`` function returned for a request of ``rows`` rows to ``pool``, or fail."""
        if type(result) is dict and len(result) == len(self.checks):
            ready = []
            for name, tensor, plan in self.checks:
                value = result.get(name)
                if not plan.accepts(value, rows):
                    break
                ready.append((tensor, value))
            else:
                for tensor, value in ready:
                    if tensor is not None:
                        pool[tensor] = value
                return None
        try:  # whatever the lane above does not take: the general path, from this result on
            (converted,) = self.model.batch_results(result, rows)
        except BaseException as exc:
            return StepFailure(exc)
        converted = self._converted(converted)
        if type(converted) is StepFailure:
            return converted
        for name, tensor in self.outputs:
            pool[tensor] = converted[name]
        return None

    def run(self, requests: list[Request]) -> list[Any]:
        """The step's converted outputs per request (a dict), or a StepFailure for each it failed."""
        model = self.model
        try:
            call = model.batch_call
            if call is not None and len(requests) == 1:  # @batch over a function: call it, as model.py would
                data = requests[0]
                results = model.batch_results(call(**data), request_size(data))
            else:
                results = model.checked_results(model.infer_func(requests), len(requests))
        except BaseException as exc:  # the step's failure is each of these requests' answer (logged there)
            if len(requests) > 1 and error_code(exc) in CLIENT_FAULTS:  # or the wrong ones', each run alone
                return [result for request in requests for result in self.run([request])]
            return [StepFailure(exc)] * len(requests)
        return [self._converted(result) for result in results]

    def _converted(self, result: Any) -> Any:
        """One request's outputs as the step's response would carry them, or its StepFailure."""
        if type(result) is StepFailure:  # the step failed this request alone (an ONNX session)
            return result
        plans = self.model.output_plans
        if type(result) is dict and len(result) == len(plans):
            try:  # exactly the declared outputs: the common case
                return {plan.name: plan.convert(result[plan.name]) for plan in plans}
            except Exception:  # a name is off or a value does not convert: the checks below say which
                pass
        try:
            return {plan.name: plan.convert(value) for plan, value in self.model.output_pairs(result)}
        except BaseException as exc:  # as the step's own response would fail
            return StepFailure(exc)


def _copy(value: Any, shared: bool) -> Any:
    return value.copy() if shared and type(value) is np.ndarray else value


class FusedPipeline:
    """The fused model's callable: a list of requests in, one dict of ensemble outputs (or failure) each out."""

    def __init__(self, steps: list[_Step], outputs: list[str]):
        self.steps = steps
        self.outputs = outputs
        for step, shared in zip(steps, read_again([step.inputs for step in steps], outputs), strict=True):
            step.shared = shared
        if any(step.model.placement.tensors != NUMPY for step in steps):  # tensors change hands between kinds
            for step in steps:
                step.adopt = functools.partial(adopted, step.model.placement)
        # Each step's function under @batch, when every step has one: what _one and a specialized execute
        # (model_fused.py.tmpl) call, step by step; None: each request takes the general path
        calls = tuple(step.call for step in steps)
        self.calls = calls if all(call is not None for call in calls) else None

    @classmethod
    def create(
        cls,
        args: dict[str, str],
        steps: list[dict[str, Any]],
        outputs: list[str],
        new_model: Callable[[], Any],
        imports: Any = (),
    ):
        """The pipeline of ``steps`` (the payload's records); ``imports``, the modules the build recorded the
        payload importing, as ``TritonPythonModel.configure`` takes them."""
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        built = []
        for step in steps:
            model = new_model()
            step_args = dict(
                args,
                model_name=step["model"],
                model_config=step["config"],
                model_repository=os.path.join(version_dir, STEPS_DIR, step["model"]),
                model_version=str(step["version"]),
            )
            model.configure(step_args, step["infer_funcs"], bool(step["strict"]), step.get("tensors", NUMPY), imports)
            built.append(_Step(model, step["input_map"], step["output_map"]))
        return cls(built, outputs)

    def fused_steps(self) -> list[tuple[str, Any]]:
        """``(model name, its callable)`` per step: what readiness asks (runtime/readiness.py)."""
        return [(step.model.model_name, step.model.infer_func) for step in self.steps]

    def __call__(self, requests: list[Request]) -> list[Any]:
        if len(requests) == 1 and self.calls is not None:
            return [self._one(requests[0])]
        return self._general(requests)

    def _one(self, request: Request) -> Any:
        """One request through steps that are all ``@batch`` functions: no Request objects between them."""
        return self._rest(dict(request), 0)

    def resume(self, pool: dict[str, Any], index: int, result: Any, rows: int) -> Any:
        """``_one`` from step ``index``'s ``result`` on: where a specialized execute's straight line ends."""
        failure = self.steps[index].absorb(pool, result, rows)
        return failure if failure is not None else self._rest(pool, index + 1)

    def _rest(self, pool: dict[str, Any], start: int) -> Any:
        for step in self.steps[start:]:
            failure = step.one(pool)
            if failure is not None:
                return failure
        return {name: pool[name] for name in self.outputs}

    def _general(self, requests: list[Request]) -> list[Any]:
        pools: list[Any] = [dict(r) for r in requests]  # per request: ensemble tensor -> array, or its StepFailure
        for step in self.steps:
            live = [i for i, pool in enumerate(pools) if type(pool) is not StepFailure]
            if not live:
                break
            step_requests = []
            for i in live:
                step_requests.append(Request(step.data(pools[i]), source=requests[i]._source, handed=False))
            if step.adopt is not None:  # host tensors onto this step's GPU, the batch's in one copy
                arrive(step.model.placement, step_requests)
            for i, result in zip(live, step.run(step_requests), strict=True):
                if type(result) is StepFailure:
                    pools[i] = result
                    continue
                pool = pools[i]
                for name, tensor in step.outputs:
                    pool[tensor] = result[name]
        return [pool if type(pool) is StepFailure else {name: pool[name] for name in self.outputs} for pool in pools]

    def finalize(self) -> None:
        for step in self.steps:
            step.model.close()


def copied(value: Any) -> Any:
    """A copy of a tensor that another reader still holds (fused steps each get their own, as Triton gives)."""
    if type(value) is np.ndarray:
        return value.copy()
    framework = framework_of(value)
    return value if framework is None else framework.copy(value)


def adopted(placement: Any, value: Any) -> Any:
    """A tensor another step produced, as the callable of a step with ``placement`` takes its inputs; host arrays
    of a GPU instance with an ``arrival`` stay as they are until :func:`arrive` moves the batch's together."""
    framework = placement.framework
    if framework is None:
        return host_array(value)
    if type(value) is np.ndarray:
        if value.dtype == object or placement.arrival is not None:
            return value
        return framework.adopt(value, placement.device)
    return value


def arrive(placement: Any, requests: Sequence[dict[str, Any]]) -> None:
    """The host arrays that :func:`adopted` left, moved onto the device in one copy (a no-op without an arrival)."""
    if placement.arrival is not None:
        placement.arrival.move(requests)
