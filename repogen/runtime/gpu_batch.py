"""A GPU instance's batch straight through, for a torch model under a plain ``@batch`` whose readers are network
clients: what a careful hand writes (bench/handwritten/Gpu*BP), with the runtime's checks.

Every request's host inputs are joined by numpy straight into page-locked memory the instance keeps, one input's
rows after another's, and cross to the GPU in one asynchronous copy; the ``@batch`` function gets one view of that
copy per input. Each output it returns, checked once for the whole batch (dtype, shape, rows, device), is copied
into page-locked memory without waiting; the batch waits once, and each request is answered with numpy views of
its rows, so the server has nothing left to fetch from the stub. A batch costs the same few tensor-API calls
whatever the number of requests: none per request, where the general path (runtime/transfers.py: requests made
one by one, ``@batch`` merging them, each request's slice of each output checked and laid out) spends some for
every request and output.

Anything else is the general path's, from where this lane stops: a request that does not hold exactly the
declared inputs, or an input the stub holds in a form numpy cannot join, before anything is copied; outputs that
are not exactly the declared ones as this lane sends them (a cast, another device, a sequence, an error to name),
from the callable's result (``finish_batch``). The lane is taken only where every input comes in host memory and
holds numbers numpy can hold (not BYTES, not BF16), and the outputs' readers take host memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any

import numpy as np

from .contract import BF16, GPU, STRING
from .frameworks import Framework, device_index
from .transfers import ALIGN, Staging

# numpy >= 1.25: concatenate's C implementation, without the __array_function__ dispatch in front of it
_concatenate = getattr(np.concatenate, "_implementation", np.concatenate)


class Output:
    """What the lane checks of one declared output, precomputed: its name, dtypes, and strict shape."""

    __slots__ = ("name", "dtype", "element", "rank", "fixed")

    def __init__(self, name: str, dtype: np.dtype, element: Any, rank: int | None, fixed: tuple[tuple[int, int], ...]):
        self.name = name
        self.dtype = dtype
        self.element = element  # the framework's dtype object
        self.rank = rank  # None: any rank of one axis or more (not strict)
        self.fixed = fixed  # (axis, size) of each fixed dimension, strict only


class BatchLane:
    """One instance's lane: its page-locked memory for inputs and for outputs, and what it checks."""

    def __init__(
        self,
        framework: Any,  # runtime.frameworks.Torch (batch_lane takes no other)
        device: str,
        call: Callable[..., Any],
        inputs: dict[str, int],
        outputs: list[Output],
    ):
        self.framework = framework
        self.device = device
        self.index = device_index(device)
        self.call = call
        self.inputs = inputs  # name -> rank with the batch axis
        self.outputs = outputs
        torch = framework.xp
        self.tensor_type = torch.Tensor
        self.grad_enabled = torch.is_grad_enabled
        self.set_grad_enabled = torch._C._set_grad_enabled  # what torch.no_grad() sets, without its Python around it
        self.synchronize = framework.synchronize
        self.into = Staging(framework)
        self.out = Staging(framework)

    def serve(self, model: Any, requests: Sequence[Any], pb_utils: Any) -> list[Any] | None:
        """The batch's responses, or None where it is not this lane's (nothing was done: the general path serves it).

        ``model`` is the ``TritonPythonModel`` serving it: its ``failures`` and ``failed_together`` answer an error
        (one response object per request), its ``finish_batch`` takes outputs this lane does not send from where the
        callable left them.
        """
        parts = self._parts(requests)
        if parts is None:
            return None
        inputs, sizes = parts
        count = len(requests)
        try:
            staged = self._arrive(inputs)
        except Exception as exc:  # page-locked memory or the copy refused (out of memory): the batch's answer
            return model.failures(exc, count)  # type: ignore[no-any-return]
        if staged is None:
            return None
        try:
            result = self.call(**staged)
        except BaseException as exc:  # the callable's failure: as the general path answers it (a client's fault
            self._settle()  # in a shared batch: each request served again alone)
            return model.failed_together(exc, list(requests))  # type: ignore[no-any-return]
        try:
            hosts = self._depart(result, sum(sizes))
        except Exception as exc:  # as above
            self._settle()
            return model.failures(exc, count)  # type: ignore[no-any-return]
        if hosts is None:
            self._settle()
            return model.finish_batch(result, sizes, list(requests))  # type: ignore[no-any-return]
        return _responses(pb_utils, hosts, sizes)

    def _parts(self, requests: Sequence[Any]) -> tuple[dict[str, list[np.ndarray]], list[int]] | None:
        """Each declared input's arrays, request by request, and each request's rows; None for a request that does
        not hold exactly the declared inputs (an optional one left out), an empty batch (the general path says), or
        one whose client asked for only some of the outputs (runtime/requested.py: the general path sends those)."""
        inputs = self.inputs
        if len(self.outputs) > 1 and any(_asks_some(request, len(self.outputs)) for request in requests):
            return None
        parts: dict[str, list[np.ndarray]] = {name: [] for name in inputs}
        sizes = []
        for request in requests:
            tensors = request.inputs()
            if len(tensors) != len(inputs):
                return None
            rows = -1
            for tensor in tensors:
                name = tensor.name()
                found = parts.get(name)
                if found is None:
                    return None
                try:
                    array = tensor.as_numpy()
                except Exception:  # in GPU memory after all (CUDA shared memory): the general path takes it as it is
                    return None
                if array.ndim < inputs[name]:
                    return None
                if rows < 0:
                    rows = array.shape[0]  # what @batch splits by: the rows of the request's first input
                found.append(array)
            sizes.append(rows)
        count = len(requests)
        for found in parts.values():
            if len(found) != count:
                return None  # an input twice, another missing
        return parts, sizes

    def _arrive(self, parts: dict[str, list[np.ndarray]]) -> dict[str, Any] | None:
        """The inputs joined into page-locked memory and copied to the device in one copy; one tensor each there."""
        layout = []
        size = 0
        for name, arrays in parts.items():
            rows = nbytes = 0
            for array in arrays:
                rows += array.shape[0]
                nbytes += array.nbytes
            first = arrays[0]
            offset = -(-size // ALIGN) * ALIGN  # aligned(size)
            size = offset + nbytes
            layout.append((name, arrays, offset, (rows, *first.shape[1:]), first.dtype))
        into = self.into
        if into.pending is not None or into.array is None or into.array.nbytes < size:
            into.take(size)
        views = into.views
        device = self.device
        for _, arrays, offset, shape, dtype in layout:
            view = views.get((offset, dtype, shape)) or into.typed(offset, dtype, shape)
            try:
                if len(arrays) == 1:
                    view[1][...] = arrays[0]
                else:
                    _concatenate(arrays, out=view[1])
            except (ValueError, TypeError):  # rows of another shape or dtype: @batch's own error names them
                return None
            if len(layout) == 1:  # one input: its typed bytes cross as they are
                return {layout[0][0]: view[0].to(device, non_blocking=True)}
        typed = self.framework.typed
        copied = into.tensor[:size].to(device, non_blocking=True)
        return {name: typed(copied, offset, dtype, shape) for name, _, offset, shape, dtype in layout}

    def _depart(self, result: Any, rows: int) -> list[tuple[str, np.ndarray]] | None:
        """Each declared output copied into page-locked memory without waiting, then the batch's one wait: numpy views
        of it; None, before anything is copied, where an output is not exactly what this lane sends (the declared
        dtype and shape, ``rows`` rows, on this instance's GPU): the general path converts it or names the fault."""
        outputs = self.outputs
        if type(result) is not dict or len(result) != len(outputs):
            return None
        layout = []
        size = 0
        for output in outputs:
            value = result.get(output.name)
            if not isinstance(value, self.tensor_type) or value.dtype != output.element:
                return None
            shape = value.shape
            if not shape or shape[0] != rows or (output.rank is not None and len(shape) != output.rank):
                return None
            for axis, size_there in output.fixed:
                if shape[axis] != size_there:
                    return None
            if value.get_device() != self.index:
                return None
            offset = -(-size // ALIGN) * ALIGN
            size = offset + output.dtype.itemsize * prod(shape)
            layout.append((output, value, shape, offset))
        out = self.out
        if out.pending is not None or out.array is None or out.array.nbytes < size:
            out.take(size)
        views = out.views
        hosts = []
        recording = self.grad_enabled()
        if recording:  # an output that keeps a graph is copied without adding to it (it would grow every batch)
            self.set_grad_enabled(False)
        try:
            for output, value, shape, offset in layout:
                pinned, host = views.get((offset, output.dtype, shape)) or out.typed(offset, output.dtype, shape)
                pinned.copy_(value, True)  # non_blocking, given by position: torch parses it faster
                hosts.append((output.name, host))
            self.synchronize(self.device)
        finally:
            if recording:
                self.set_grad_enabled(True)
        return hosts

    def _settle(self) -> None:
        """The staged inputs' copy finished before the memory is written again, where the batch ended otherwise than
        with its own wait (an error, the general path)."""
        self.into.pending = self.framework.marker(self.device)


def _asks_some(request: Any, declared: int) -> bool:
    """Whether ``request``'s client asked for fewer than the ``declared`` outputs (Triton hands every one where it
    named none; a request without ``requested_output_names``, before r23.09 or a stand-in, asks for all)."""
    read = getattr(request, "requested_output_names", None)
    if read is None:
        return False
    try:
        names = read()
    except Exception:  # as runtime/requested.py: every output
        return False
    return bool(names) and len(names) < declared


def _responses(pb_utils: Any, hosts: list[tuple[str, np.ndarray]], sizes: list[int]) -> list[Any]:
    """Each request's response: numpy views of its rows of each output."""
    tensor, response = pb_utils.Tensor, pb_utils.InferenceResponse
    if len(sizes) == 1:
        return [response(output_tensors=[tensor(name, host) for name, host in hosts])]
    responses: list[Any] = []
    answer = responses.append
    start = 0
    for size in sizes:
        end = start + size
        tensors = []
        for name, host in hosts:
            tensors.append(tensor(name, host[start:end]))
        answer(response(output_tensors=tensors))
        start = end
    return responses


def batch_lane(
    framework: Framework | None,
    device: str,
    call: Callable[..., Any] | None,
    ranks: dict[str, int],
    data_types: dict[str, str],
    plans: Sequence[Any],
    host_inputs: bool,
    output_memory: str,
) -> BatchLane | None:
    """The lane of a model's instance, where it takes one: a torch model on a GPU under a plain ``@batch`` (``call``,
    the function under it), whose inputs all come in host memory (``host_inputs``) and whose outputs' readers take
    host memory (``output_memory``), every input and output of a dtype numpy holds (``plans``: its OutputPlans)."""
    if framework is None or framework.name != "torch" or not device.startswith("cuda") or call is None:
        return None
    if not host_inputs or output_memory == GPU or not ranks or any(t in _NOT_NUMERIC for t in data_types.values()):
        return None
    outputs = []
    for plan in plans:
        element = getattr(framework.xp, plan.element, None) if plan.dtype is not None and not plan.is_bytes else None
        if element is None:
            return None
        rank, fixed = (plan.ndim, plan.fixed) if plan.strict else (None, ())
        outputs.append(Output(plan.name, plan.dtype, element, rank, fixed))
    return BatchLane(framework, device, call, dict(ranks), outputs)


_NOT_NUMERIC = frozenset({STRING, BF16})
