"""``model.py`` with an ``execute`` specialized to one model's signature (model_batch.py.tmpl).

The runtime's general ``execute`` interprets the config on every request: each input's rank,
each output's conversion plan, the ``@batch`` merge and split. For the common model (a ``@batch``
function on a batching, non-decoupled model, inputs in CPU memory) this module writes that request path out
as straight-line code: inputs read by name, one call, each output checked inline against its
declared dtype, rows and (strict) shape. Whatever the straight line does not cover falls back to
the general path, so the answers are the same; only the instructions per request differ.
"""

from __future__ import annotations

import keyword

from ..ir.spec import IOSpec, ModelSpec, SequenceBatchingSpec, VersionSpec
from ..runtime.request_decorators import specializable as batch_function
from ..triton.dtypes import BF16, NUMPY_DTYPES
from ..version import __version__
from .templates import render

GENERAL_TEMPLATE = "model.py.tmpl"
SPECIALIZED_TEMPLATE = "model_batch.py.tmpl"
INDENT = " " * 8
SIZES = "[len(part) for part in in0_parts]"  # each request's rows, in _execute_many


def header(model: ModelSpec, version: VersionSpec) -> dict[str, object]:
    """The values every specialized ``model.py`` template opens with: who generated it, for which model, and
    the tensor names its ``execute`` reads and writes."""
    return {
        "repogen_version": __version__,
        "model_name": model.name,
        "model_version": version.version,
        "input_names": ", ".join(repr(t.name) for t in model.inputs),
        "output_names": ", ".join(repr(t.name) for t in model.outputs),
    }


def model_py(model: ModelSpec, version: VersionSpec) -> bytes:
    """This version's ``model.py``: specialized when every callable can take the straight line."""
    if not writes_out(model, version):
        return render(GENERAL_TEMPLATE, **header(model, version))
    inputs = [InputCode(i, tensor, model.max_batch_size > 0) for i, tensor in enumerate(model.inputs)]
    outputs = [OutputCode(i, tensor, model.strict) for i, tensor in enumerate(model.outputs)]
    return render(
        SPECIALIZED_TEMPLATE,
        **header(model, version),
        dtypes="\n".join(o.dtype_constant() for o in outputs),
        count_check=count_check(inputs),
        sizes=SIZES,
        read_inputs=read_inputs(inputs),
        read_inputs_many=read_inputs_many(inputs),
        call_arguments=call_arguments([(i.tensor.name, i.var) for i in inputs]),
        output_count=len(outputs),
        check_outputs="\n".join(o.check("self.finish_batch(result, [rows], requests)") for o in outputs),
        check_outputs_many="\n".join(o.check(f"self.finish_batch(result, {SIZES}, requests)") for o in outputs),
        tensors=", ".join(f"_Tensor({o.tensor.name!r}, {o.var})" for o in outputs),
        tensors_sliced=", ".join(f"tensor({o.tensor.name!r}, {o.var}[start:end])" for o in outputs),
    )


def writes_out(model: ModelSpec, version: VersionSpec) -> bool:
    """``@batch`` over a plain function on a batching model that answers once per request, with I/O in CPU memory."""
    if model.max_batch_size <= 0 or model.decoupled or isinstance(model.scheduler, SequenceBatchingSpec):
        return False
    if not model.placement.numpy_on_cpu or any(t.data_type == BF16 for t in (*model.inputs, *model.outputs)):
        return False  # framework tensors, and BF16 (which numpy cannot hold), take the general path
    if not model.inputs or not model.outputs or not version.infer_funcs:
        return False
    return all(batch_function(func) is not None for func in version.infer_funcs)


class InputCode:
    def __init__(self, index: int, tensor: IOSpec, batched: bool):
        self.tensor = tensor
        self.var = f"in{index}"
        dims = tensor.reshape if tensor.reshape is not None else tensor.dims
        self.rank = len(dims) + (1 if batched else 0)

    def read(self, source: str, var: str | None = None) -> str:
        return f"{var or self.var} = {source}.as_numpy()"


def read_inputs(inputs: list[InputCode], rows: bool = True) -> str:
    """Read every input; a rank other than declared (an empty batch) leaves for the general path."""
    if len(inputs) == 1:
        lines = [inputs[0].read("tensors[0]")]  # Triton admits only declared inputs: the one there is it
    else:
        lines = ["by_name = {t.name(): t for t in tensors}"]
        lines += [i.read(f"by_name[{i.tensor.name!r}]") for i in inputs]
    ranks = " or ".join(f"{i.var}.ndim != {i.rank}" for i in inputs)
    lines += [f"if {ranks}:", "    return _Runtime.execute(self, requests)"]
    if rows:  # the rank checked is at least 1: len() is the first dimension, without the shape tuple
        lines.append(f"rows = len({inputs[0].var})")
    return "\n".join(INDENT + line for line in lines)


def count_check(inputs: list[InputCode], indent: str = INDENT) -> str:
    """Leave for the general path when a request lacks an optional input; Triton admits no request that lacks a
    required one or holds an undeclared one, so without optional inputs every request has them all."""
    if not any(i.tensor.optional for i in inputs):
        return ""
    lines = [f"if len(tensors) != {len(inputs)}:", "    return _Runtime.execute(self, requests)"]
    return "".join(indent + line + "\n" for line in lines)


def read_inputs_many(inputs: list[InputCode]) -> str:
    """Each request's inputs into one list per input, then concatenated (a request's rows: its part's first dim).

    Requests whose other dims, or ranks, differ do not concatenate (ValueError); a concatenated input has
    every part's rank, so one rank check per input, not per request. Either leaves for the general path.
    """
    many = "    return _Runtime.execute(self, requests)"
    lines = [f"{i.var}_parts = []" for i in inputs]
    if len(inputs) == 1 and not inputs[0].tensor.optional:  # the one input every request has: no names to match
        lines += ["for request in requests:", f"    {inputs[0].var}_parts.append(request.inputs()[0].as_numpy())"]
    else:
        lines += ["for request in requests:", "    tensors = request.inputs()"]
        lines += count_check(inputs, "    ").splitlines()
        lines.append("    by_name = {t.name(): t for t in tensors}")
        lines += [f"    {i.var}_parts.append(by_name[{i.tensor.name!r}].as_numpy())" for i in inputs]
    lines.append("try:")
    lines += [f"    {i.var} = _concatenate({i.var}_parts)" for i in inputs]
    lines.append("except ValueError:  # the requests' other dimensions (or ranks) differ: the general path answers")
    lines.append(many)
    ranks = " or ".join(f"{i.var}.ndim != {i.rank}" for i in inputs)
    lines += [f"if {ranks}:", many, f"rows = len({inputs[0].var})"]
    return "\n".join(INDENT + line for line in lines)


def call_arguments(pairs: list[tuple[str, str]]) -> str:
    """Keyword arguments ``name=expression``; a name that is no identifier goes through ``**{...}``."""
    plain = [(name, value) for name, value in pairs if name.isidentifier() and not keyword.iskeyword(name)]
    other = [(name, value) for name, value in pairs if (name, value) not in plain]
    arguments = [f"{name}={value}" for name, value in plain]
    if other:
        arguments.append("**{" + ", ".join(f"{name!r}: {value}" for name, value in other) + "}")
    return ", ".join(arguments)


class OutputCode:
    def __init__(self, index: int, tensor: IOSpec, strict: bool, var: str = "", dtype_name: str = ""):
        self.tensor = tensor
        self.var = var or f"out{index}"
        self.dtype_name = dtype_name or f"_DTYPE_{index}"
        self.dtype = NUMPY_DTYPES[tensor.data_type]
        self.strict = strict

    def dtype_constant(self) -> str:
        return f"{self.dtype_name} = np.dtype({self.dtype.str!r})"

    def check(self, fallback: str, source: str = "result", rows: bool = True, sent: bool = True) -> str:
        """What the general path's fast lane accepts: declared dtype, one row per input row, contiguous unless
        ``sent``: an array that goes straight into ``pb_utils.Tensor`` is made contiguous there, by every
        python_backend from r23.10 on (pb_tensor.cc), so checking it here would only cost a flags object.

        ``source`` is the dict of outputs to read the value from ("": ``self.var`` already holds it);
        whatever fails a check returns ``fallback``, the general path from there.
        """
        v = self.var
        # numpy hands out one dtype object per builtin type: ``is`` settles the usual case, ``!=`` the rest
        conditions = [
            f"type({v}) is not _ndarray",
            f"{v}.dtype is not {self.dtype_name} and {v}.dtype != {self.dtype_name}",
        ]
        if not sent:
            conditions.append(f"not {v}.flags.c_contiguous")
        if self.strict:  # the rank and every fixed dimension, as OutputPlan checks them
            conditions.append(f"{v}.ndim != {len(self.tensor.dims) + 1}")
            conditions += [f"{v}.shape[{axis}] != {d}" for axis, d in enumerate(self.tensor.dims, start=1) if d != -1]
        else:
            conditions.append(f"{v}.ndim == 0")
        if rows:  # after the rank checks: len() is the first dimension
            conditions.append(f"len({v}) != rows")
        body = "".join(f"\n{INDENT}    or {c}" for c in conditions[1:])
        read = f"{INDENT}{v} = {source}.get({self.tensor.name!r})\n" if source else ""
        return f"{read}{INDENT}if (\n{INDENT}    {conditions[0]}{body}\n{INDENT}):\n{INDENT}    return {fallback}"
