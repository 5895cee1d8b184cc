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


_Placed = tuple[list[tuple[int, ...]], list[Any], list[tuple[str, np.ndarray]]]
"""A batch's outputs in page-locked memory: their shapes, the framework's tensors, numpy's arrays by name."""


class Output:
    """What the lane checks of one declared output, precomputed: its name, dtypes, and strict shape."""

    __slots__ = ("name", "dtype", "element", "rank", "fixed", "exact")

    def __init__(self, name: str, dtype: np.dtype, element: Any, rank: int | None, fixed: tuple[tuple[int, int], ...]):
        self.name = name
        self.dtype = dtype
        self.element = element  # the framework's dtype object
        self.rank = rank  # None: any rank of one axis or more (not strict)
        self.fixed = fixed  # (axis, size) of each fixed dimension, strict only
        self.exact = rank is not None and len(fixed) == rank - 1
        """Whether every dimension after the batch's is fixed (strict): the batch's rows give the shape."""


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
        self.declared = len(outputs) if len(outputs) > 1 else 0
        """How many outputs a client may ask for fewer of (0 for one output: its client gets that one)."""
        self.exact = all(output.exact for output in outputs)
        """Whether the outputs' shapes follow from the batch's rows alone: their page-locked views are kept by rows."""
        self.kept: dict[int, _Placed] = {}
        self.kept_for: np.ndarray | None = None  # the memory they view
        self.one = next(iter(inputs)) if len(inputs) == 1 else None
        """The name of a model's one input (its batch taken without a dict of inputs); None for several."""

    def serve(self, model: Any, requests: Sequence[Any], pb_utils: Any) -> list[Any] | None:
        """The batch's responses, or None where it is not this lane's (nothing was done: the general path serves it).

        ``model`` is the ``TritonPythonModel`` serving it: its ``failures`` and ``failed_together`` answer an error
        (one response object per request), its ``finish_batch`` takes outputs this lane does not send from where the
        callable left them.
        """
        if not requests or (self.declared and self._fewer(requests)):
            return None
        one = self.one
        parts = self._parts(requests) if one is None else self._parts_one(one, requests)
        if parts is None:
            return None
        found, sizes = parts
        try:
            staged = self._arrive(found) if one is None else self._arrive_one(one, found)  # type: ignore[arg-type]
        except Exception as exc:  # page-locked memory or the copy refused (out of memory): the batch's answer
            return model.failures(exc, len(requests))  # type: ignore[no-any-return]
        if staged is None:
            return None
        try:
            result = self.call(**staged)
        except BaseException as exc:  # the callable's failure: as the general path answers it (a client's fault
            self._settle()  # in a shared batch: each request served again alone)
            return model.failed_together(exc, list(requests))  # type: ignore[no-any-return]
        try:
            hosts = self._depart(result, sizes[0] if len(sizes) == 1 else sum(sizes))
        except Exception as exc:  # as above
            self._settle()
            return model.failures(exc, len(requests))  # type: ignore[no-any-return]
        if hosts is None:
            self._settle()
            return model.finish_batch(result, sizes, list(requests))  # type: ignore[no-any-return]
        return _responses(pb_utils, hosts, sizes)

    def _fewer(self, requests: Sequence[Any]) -> bool:
        """Whether a client asked for only some of the outputs (runtime/requested.py: the general path sends those;
        Triton hands every declared name where the client named none)."""
        declared = self.declared
        for request in requests:
            read = getattr(request, "requested_output_names", None)  # none before r23.09, or a stand-in's
            try:
                asked = len(read()) if read is not None else 0
            except Exception:  # as runtime/requested.py: every output
                asked = 0
            if 0 < asked < declared:
                return True
        return False

    def _parts(self, requests: Sequence[Any]) -> tuple[dict[str, list[np.ndarray]], list[int]] | None:
        """Each declared input's arrays, request by request, and each request's rows; None for a request that does
        not hold exactly the declared inputs (an optional one left out)."""
        inputs = self.inputs
        parts: dict[str, list[np.ndarray]] = {}
        for name in inputs:
            parts[name] = []
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

    def _parts_one(self, name: str, requests: Sequence[Any]) -> tuple[list[np.ndarray], list[int]] | None:
        """``_parts`` of a model of one input: its arrays, each request's rows."""
        rank = self.inputs[name]
        arrays = []
        sizes = []
        for request in requests:
            tensors = request.inputs()
            if len(tensors) != 1:
                return None
            tensor = tensors[0]
            if tensor.name() != name:
                return None
            try:
                array = tensor.as_numpy()
            except Exception:  # as in _parts
                return None
            if array.ndim < rank:
                return None
            arrays.append(array)
            sizes.append(array.shape[0])
        return arrays, sizes

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
        for _, arrays, offset, shape, dtype in layout:
            view = views.get((offset, dtype, shape)) or into.typed(offset, dtype, shape)
            try:
                _concatenate(arrays, out=view[1])
            except (ValueError, TypeError):  # rows of another shape or dtype: @batch's own error names them
                return None
        typed = self.framework.typed
        copied = into.tensor[:size].to(self.device, non_blocking=True)
        return {name: typed(copied, offset, dtype, shape) for name, _, offset, shape, dtype in layout}

    def _arrive_one(self, name: str, arrays: list[np.ndarray]) -> dict[str, Any] | None:
        """``_arrive`` of a model of one input: its rows at the memory's start, typed bytes crossing as they are."""
        first = arrays[0]
        if len(arrays) == 1:
            shape, nbytes = first.shape, first.nbytes
        else:
            rows = nbytes = 0
            for array in arrays:
                rows += array.shape[0]
                nbytes += array.nbytes
            shape = (rows, *first.shape[1:])
        into = self.into
        if into.pending is not None or into.array is None or into.array.nbytes < nbytes:
            into.take(nbytes)
        dtype = first.dtype
        view = into.views.get((0, dtype, shape)) or into.typed(0, dtype, shape)
        try:
            if len(arrays) == 1:
                view[1][...] = first
            else:
                _concatenate(arrays, out=view[1])
        except (ValueError, TypeError):  # rows of another shape or dtype: @batch's own error names them
            return None
        return {name: view[0].to(self.device, non_blocking=True)}

    def _depart(self, result: Any, rows: int) -> list[tuple[str, np.ndarray]] | None:
        """Each declared output copied into page-locked memory without waiting, then the batch's one wait: numpy views
        of it; None, before anything is copied, where an output is not exactly what this lane sends (the declared
        dtype and shape, ``rows`` rows, on this instance's GPU): the general path converts it or names the fault."""
        outputs = self.outputs
        if type(result) is not dict or len(result) != len(outputs):
            return None
        out = self.out
        kept = self.kept.get(rows) if self.kept_for is out.array else None
        shapes = kept[0] if kept is not None else None
        values: list[Any] = []
        for output in outputs:
            value = result.get(output.name)
            if not isinstance(value, self.tensor_type) or value.dtype != output.element:
                return None
            if shapes is not None:
                if value.shape != shapes[len(values)]:
                    return None
            elif not _fits(value.shape, output, rows):
                return None
            if value.get_device() != self.index:
                return None
            values.append(value)
        if kept is None or out.pending is not None:
            kept = self._placed(values, rows)
        _, pinneds, hosts = kept
        recording = self.grad_enabled()
        if recording:  # an output that keeps a graph is copied without adding to it (it would grow every batch)
            self.set_grad_enabled(False)
        try:
            for pinned, value in zip(pinneds, values):  # noqa: B905 - one per output, both (strict= parses a keyword)
                pinned.copy_(value, True)  # non_blocking, given by position: torch parses it faster
            self.synchronize(self.device)
        finally:
            if recording:
                self.set_grad_enabled(True)
        return hosts

    def _placed(self, values: list[Any], rows: int) -> _Placed:
        """The outputs' shapes, their page-locked views (the framework's tensors; numpy's arrays by name), the memory
        free to be written; kept by ``rows`` where the shapes follow from them (``exact``) while the memory stays."""
        out = self.out
        if out.pending is not None:
            out.take(0)
        layout = []
        size = 0
        for output, value in zip(self.outputs, values, strict=True):
            offset = -(-size // ALIGN) * ALIGN
            shape = tuple(value.shape)
            size = offset + output.dtype.itemsize * prod(shape)
            layout.append((offset, output.dtype, shape))
        if out.array is None or out.array.nbytes < size:
            out.take(size)
        views = [out.views.get(key) or out.typed(*key) for key in layout]
        placed = (
            [shape for _, _, shape in layout],
            [pinned for pinned, _ in views],
            [(output.name, host) for output, (_, host) in zip(self.outputs, views, strict=True)],
        )
        if self.exact:
            if self.kept_for is not out.array:
                self.kept, self.kept_for = {}, out.array
            self.kept[rows] = placed
        return placed

    def _settle(self) -> None:
        """The staged inputs' copy finished before the memory is written again, where the batch ended otherwise than
        with its own wait (an error, the general path)."""
        self.into.pending = self.framework.marker(self.device)


def _fits(shape: Any, output: Output, rows: int) -> bool:
    """Whether ``shape`` has ``rows`` rows, and ``output``'s rank and fixed dimensions where it declares some."""
    if not shape or shape[0] != rows:
        return False
    if output.rank is not None and len(shape) != output.rank:
        return False
    return all(shape[axis] == size for axis, size in output.fixed)


def _responses(pb_utils: Any, hosts: list[tuple[str, np.ndarray]], sizes: list[int]) -> list[Any]:
    """Each request's response: numpy views of its rows of each output (the response's tensors given by position:
    pybind11 looks no keyword up)."""
    tensor, response = pb_utils.Tensor, pb_utils.InferenceResponse
    if len(sizes) == 1:
        tensors = []
        for name, host in hosts:
            tensors.append(tensor(name, host))
        return [response(tensors)]
    responses: list[Any] = []
    answer = responses.append
    start = 0
    for size in sizes:
        end = start + size
        tensors = []
        for name, host in hosts:
            tensors.append(tensor(name, host[start:end]))
        answer(response(tensors))
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
