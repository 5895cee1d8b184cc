"""Small ONNX files for tests, written with repogen's own subset of ONNX's schema (no onnx package).

``write_graph(path, inputs, outputs)`` writes a model whose graph has those inputs and outputs, each
``(name, element type, dims)``: dims of ints (fixed), strings (symbolic), None (unknown); dims None
for a tensor without a shape, element type None for a non-tensor value. The graph has one Identity
node: enough for the build, which reads tensors only, not for onnxruntime to run it meaningfully.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..triton.proto import onnx_graph_pb2 as onnx_pb

__all__ = ["FLOAT", "INT64", "STRING", "write_graph"]

FLOAT, INT64, STRING = onnx_pb.TensorProto.FLOAT, onnx_pb.TensorProto.INT64, onnx_pb.TensorProto.STRING
Tensor = tuple[str, Any, Any]


def _value(values: Any, name: str, elem: int | None, dims: Sequence[int | str | None] | None) -> None:
    value = values.add(name=name)
    if elem is None:
        return
    value.type.tensor_type.elem_type = elem
    if dims is None:
        return
    shape = value.type.tensor_type.shape
    shape.SetInParent()
    for dim in dims:
        if isinstance(dim, str):
            shape.dim.add(dim_param=dim)
        elif dim is None:
            shape.dim.add()
        else:
            shape.dim.add(dim_value=dim)


def write_graph(
    path: Path,
    inputs: Sequence[Tensor],
    outputs: Sequence[Tensor],
    initializers: Sequence[str] = (),
    external: str | None = None,
) -> Path:
    """An ONNX file at ``path``; ``initializers`` are weights also listed among the inputs (as IR < 4 did).

    ``external``: the initializers keep their data (3 floats each) in that file, beside the graph, as
    ``onnx.save(..., save_as_external_data=True, location=external)`` writes it.
    """
    model = onnx_pb.ModelProto(ir_version=8, producer_name="repogen tests")
    model.opset_import.add(domain="", version=13)
    graph = model.graph
    graph.name = "g"
    for name, elem, dims in inputs:
        _value(graph.input, name, elem, dims)
    for name, elem, dims in outputs:
        _value(graph.output, name, elem, dims)
    data = b""
    for name in initializers:
        weight = graph.initializer.add(name=name, data_type=FLOAT, dims=[3])
        _value(graph.input, name, FLOAT, [3])
        if external is not None:
            weight.data_location = onnx_pb.TensorProto.EXTERNAL
            for key, value in (("location", external), ("offset", str(len(data))), ("length", "12")):
                weight.external_data.add(key=key, value=value)
            data += bytes((len(data) + i) % 256 for i in range(12))
    if external is not None:
        (path.parent / external).parent.mkdir(parents=True, exist_ok=True)
        (path.parent / external).write_bytes(data)
    graph.node.add(op_type="Identity", input=[inputs[0][0]], output=[outputs[0][0]])
    path.write_bytes(model.SerializeToString())
    return path
