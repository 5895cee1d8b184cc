"""``model.py`` for an ONNX graph on the Python backend, with its request path written out (model_onnx.py.tmpl).

The runtime's general path builds a ``Request`` per request, hands the list to ``OnnxSession``, which
checks the requests' names and shapes, runs the session and builds a dict per answer, and converts
each output through its plan: about 45 k instructions per request on Python 3.10 that a hand-written
``model.py`` does not spend. For a graph whose tensors numpy holds as they are (no BYTES, which
onnxruntime takes as ``str``; no BF16), read from host memory, this writes that path as straight-line
code: inputs read by name, one ``session.run`` with the instance's run options, each output checked
inline. Whatever the straight line does not cover goes the general path, so the answers are the same.
"""

from __future__ import annotations

from ..ir.spec import ModelSpec, SequenceBatchingSpec, VersionSpec
from ..runtime.onnx_session import OnnxSession
from ..triton.dtypes import BF16, STRING
from .model_source import InputCode, OutputCode, count_check, header, read_inputs, read_inputs_many
from .templates import render

ONNX_TEMPLATE = "model_onnx.py.tmpl"
GENERAL = "_Runtime.execute(self, requests)"


def runs_graph_inline(model: ModelSpec, version: VersionSpec) -> bool:
    """An ``OnnxSession`` model answering once per request, its tensors numpy arrays in host memory as they are."""
    if version.infer_funcs != (OnnxSession,) or model.decoupled or isinstance(model.scheduler, SequenceBatchingSpec):
        return False
    if not model.placement.numpy_on_cpu or not model.inputs or not model.outputs:
        return False
    return not any(t.data_type in (BF16, STRING) for t in (*model.inputs, *model.outputs))


def onnx_model_py(model: ModelSpec, version: VersionSpec) -> bytes | None:
    """This version's specialized ``model.py``, or None when the general one serves it."""
    if not runs_graph_inline(model, version):
        return None
    batched = model.max_batch_size > 0
    inputs = [InputCode(i, tensor, batched) for i, tensor in enumerate(model.inputs)]
    outputs = [OutputCode(i, tensor, model.strict) for i, tensor in enumerate(model.outputs)]
    feed = ", ".join(f"{i.tensor.name!r}: {i.var}" for i in inputs)
    result = ", ".join(f"{o.tensor.name!r}: {o.var}" for o in outputs)
    values = f"({outputs[0].var},)" if len(outputs) == 1 else ", ".join(o.var for o in outputs)
    alone = f"[self.response({{{result}}})]"
    return render(
        ONNX_TEMPLATE,
        **header(model, version),
        dtypes="\n".join(o.dtype_constant() for o in outputs),
        execute_many="self._execute_many(requests, graph)" if batched else GENERAL,
        count_check=count_check(inputs),
        read_inputs=read_inputs(inputs, rows=False),
        outputs_tuple=values,
        feed=feed,
        check_outputs="\n".join(o.check(alone, source="", rows=False) for o in outputs),
        tensors=", ".join(f"pb_utils.Tensor({o.tensor.name!r}, {o.var})" for o in outputs),
        result=result,
        execute_many_method=_execute_many(inputs, outputs, values, feed) if batched else "",
    )


def _execute_many(inputs: list[InputCode], outputs: list[OutputCode], values: str, feed: str) -> str:
    """The requests stacked into one run and each answered with its rows, as ``OnnxSession`` runs a batch."""
    sliced = ", ".join(f"tensor({o.tensor.name!r}, {o.var}[start:end])" for o in outputs)
    lines = [
        "",
        "    def _execute_many(self, requests, graph):",
        '        """Several requests in one run; a batch the straight line does not cover, the general path."""',
        read_inputs_many(inputs),
        "        try:",
        f"            {values} = graph.session.run(_OUTPUTS, {{{feed}}}, graph.run_options)",
        "        except Exception:  # which request onnxruntime refuses: the general path runs each on its own",
        f"            return {GENERAL}",
        "        except BaseException as exc:  # as the general path answers it",
        "            return self.failures(exc, len(requests))",
        *(o.check(GENERAL, source="") for o in outputs),
        "        responses = []",
        "        answer = responses.append",
        "        tensor, response = pb_utils.Tensor, pb_utils.InferenceResponse  # attached to pb_utils after import",
        "        start = 0",
        "        try:",
        "            for part in in0_parts:",
        "                end = start + part.shape[0]",
        f"                answer(response(output_tensors=[{sliced}]))",
        "                start = end",
        "        except Exception:  # as in execute",
        f"            return {GENERAL}",
        "        return responses",
    ]
    return "\n".join(lines) + "\n"
