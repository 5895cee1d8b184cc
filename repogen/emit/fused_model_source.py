"""``model.py`` for a fused ensemble, with its steps written out (model_fused.py.tmpl).

The runtime's ``FusedPipeline`` runs a request through each step with dict lookups, a loop over
the step's output checks and a conversion of the answer; when every step is a ``@batch`` function
(the steps a specialized ``model.py`` serves alone) this module writes that pipeline out instead:
the inputs read by name, each step's function called with its tensors, each result checked inline
against the step's declared outputs, the answer sent. A check that fails hands the request to
``FusedPipeline.resume`` at that step, so the answers are the same; only the instructions differ.
"""

from __future__ import annotations

from ..ir.spec import FusedSpec
from ..runtime.contract import read_again
from .model_source import INDENT, InputCode, OutputCode, call_arguments, header, model_py, read_inputs, writes_out
from .templates import render

FUSED_TEMPLATE = "model_fused.py.tmpl"


def fused_model_py(fused: FusedSpec) -> bytes:
    """The fused model's ``model.py``: its steps written out when each can take the straight line."""
    model = fused.model
    version = model.versions[0]
    if not fused_writes_out(fused):
        return model_py(model, version)
    inputs = [InputCode(i, tensor, True) for i, tensor in enumerate(model.inputs)]
    names = {i.tensor.name: i.var for i in inputs}  # ensemble tensor -> the variable holding it
    dtypes: list[str] = []
    steps = []
    shared = read_again([list(step.input_map) for step in fused.steps], [t.name for t in model.outputs])
    for index, (step, spec) in enumerate(zip(fused.steps, fused.step_models, strict=True)):
        outputs = [
            OutputCode(j, tensor, spec.strict, var=f"s{index}_{j}", dtype_name=f"_DTYPE_{index}_{j}")
            for j, tensor in enumerate(spec.outputs)
        ]
        dtypes += [o.dtype_constant() for o in outputs]
        steps.append(_step_code(index, step.model, step.input_map, step.output_map, shared[index], outputs, names))
    finals = [
        OutputCode(j, tensor, model.strict, var=names[tensor.name], dtype_name=f"_DTYPE_{j}")
        for j, tensor in enumerate(model.outputs)
    ]
    dtypes += [o.dtype_constant() for o in finals]
    answer = _pool(names, [t.name for t in model.outputs])
    calls = [f"call{index}" for index in range(len(fused.steps))]
    return render(
        FUSED_TEMPLATE,
        **header(model, version),
        step_names=", ".join(repr(step.model) for step in fused.steps),
        dtypes="\n".join(dtypes),
        input_count=len(inputs),
        read_inputs=read_inputs(inputs, rows=False),
        calls=", ".join(calls) + ("," if len(calls) == 1 else ""),
        steps="\n".join(steps),
        check_outputs="\n".join(o.check(f"self.responses([{answer}])", source="", rows=False) for o in finals),
        tensors=", ".join(f"pb_utils.Tensor({o.tensor.name!r}, {o.var})" for o in finals),
        answer=answer,
    )


def fused_writes_out(fused: FusedSpec) -> bool:
    """A batching fused model, inputs in CPU memory, whose every step a specialized ``model.py`` could serve."""
    model = fused.model
    if model.max_batch_size <= 0 or not model.placement.numpy_on_cpu or not model.inputs:
        return False
    steps = zip(fused.steps, fused.step_models, strict=True)
    return all(step.input_map and writes_out(spec, spec.versions[-1]) for step, spec in steps)


def _pool(names: dict[str, str], tensors: list[str]) -> str:
    return "{" + ", ".join(f"{tensor!r}: {names[tensor]}" for tensor in tensors) + "}"


def _step_code(
    index: int,
    model: str,
    input_map: tuple[tuple[str, str], ...],
    output_map: tuple[tuple[str, str], ...],
    shared: frozenset[str],
    outputs: list[OutputCode],
    names: dict[str, str],
) -> str:
    """Call step ``index``, check its outputs, bind the ensemble tensors it makes; ``names`` gains them."""
    arguments = [(name, names[tensor] + (".copy()" if tensor in shared else "")) for name, tensor in input_map]
    fallback = f"self.finish_fused({_pool(names, sorted(names))}, {index}, result, rows)"
    lines = [
        f"# step {index}: '{model}'",
        "try:",
        f"    result = call{index}({call_arguments(arguments)})",
        "except BaseException as exc:  # the step's failure is this request's answer",
        "    return [self.failure(exc)]",
        f"rows = {names[input_map[0][1]]}.shape[0]",  # request_size: the first input, by name
        f"if type(result) is not dict or len(result) != {len(outputs)}:",
        f"    return {fallback}",
    ]
    code = "\n".join(INDENT + line for line in lines)
    code += "".join("\n" + o.check(fallback, sent=False) for o in outputs)  # the next step's inputs
    made = dict(output_map)
    names.update((made[o.tensor.name], o.var) for o in outputs if o.tensor.name in made)
    return code
