"""What an ONNX file says about its graph's tensors: names, Triton data types, dims.

Read with the protobuf runtime and the subset of ONNX's schema in ``proto/onnx_graph.proto``
(upstream's field numbers), so a build reads any ``.onnx`` file without the ``onnx`` package: an
app that makes its graph with ``onnx`` needs it, repogen does not. Nothing here runs in a server.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import DecodeError

from ..errors import BuildError
from .onnx_skim import SkimError, skim_model
from .proto import onnx_graph_pb2 as onnx_pb

# ONNX element type (TensorProto.DataType) → Triton's data type; the others have no Triton tensor.
_DATA_TYPES = {
    onnx_pb.TensorProto.FLOAT: "TYPE_FP32",
    onnx_pb.TensorProto.UINT8: "TYPE_UINT8",
    onnx_pb.TensorProto.INT8: "TYPE_INT8",
    onnx_pb.TensorProto.UINT16: "TYPE_UINT16",
    onnx_pb.TensorProto.INT16: "TYPE_INT16",
    onnx_pb.TensorProto.INT32: "TYPE_INT32",
    onnx_pb.TensorProto.INT64: "TYPE_INT64",
    onnx_pb.TensorProto.STRING: "TYPE_STRING",
    onnx_pb.TensorProto.BOOL: "TYPE_BOOL",
    onnx_pb.TensorProto.FLOAT16: "TYPE_FP16",
    onnx_pb.TensorProto.DOUBLE: "TYPE_FP64",
    onnx_pb.TensorProto.UINT32: "TYPE_UINT32",
    onnx_pb.TensorProto.UINT64: "TYPE_UINT64",
    onnx_pb.TensorProto.BFLOAT16: "TYPE_BF16",
}


@dataclasses.dataclass(frozen=True)
class GraphTensor:
    """One graph input or output: ``dims`` is None when the graph gives no shape (rank unknown)."""

    name: str
    data_type: str | None  # None: the graph gives no element type, or one Triton has no tensor for
    dims: tuple[int, ...] | None  # symbolic and unknown dims are -1
    found: str = ""  # how the graph spells the type when Triton has none for it (e.g. "COMPLEX64")


@dataclasses.dataclass(frozen=True)
class Graph:
    """A graph's inputs (initializers left out: they are weights, not inputs) and outputs, in order, and the
    files its tensors keep their data in (external data, ``location`` relative to the graph file), sorted."""

    inputs: tuple[GraphTensor, ...]
    outputs: tuple[GraphTensor, ...]
    external: tuple[str, ...] = ()


def read_graph(path: Path, where: str) -> Graph:
    """The graph of the ONNX file at ``path``; :class:`BuildError` naming ``where`` if it is not one."""
    try:
        with path.open("rb") as handle:  # weights inside the file are skipped, never read (onnx_skim)
            data = skim_model(handle, os.fstat(handle.fileno()).st_size)
    except OSError as exc:
        raise BuildError(
            f"{where}: cannot read the ONNX file {path} ({exc.strerror or exc}); paths are relative to the "
            "declaring module"
        ) from None
    except SkimError as exc:
        raise BuildError(
            f"{where}: {path} is not an ONNX model ({exc}); pass the .onnx file the export wrote"
        ) from None
    model = onnx_pb.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as exc:
        model.Clear()
        reason = str(exc) or "not a protobuf message"
        raise BuildError(
            f"{where}: {path} is not an ONNX model ({reason}); pass the .onnx file the export wrote"
        ) from None
    if not model.HasField("graph") or not model.graph.output:
        raise BuildError(
            f"{where}: {path} holds no ONNX graph with outputs (ir_version {model.ir_version}); pass the .onnx "
            "file the export wrote"
        )
    weights = {t.name for t in model.graph.initializer}
    return Graph(
        inputs=tuple(_tensor(v) for v in model.graph.input if v.name not in weights),
        outputs=tuple(_tensor(v) for v in model.graph.output),
        external=tuple(sorted({_location(t) for t in _tensors(model.graph) if _location(t)})),
    )


def _tensors(graph: onnx_pb.GraphProto) -> Iterator[onnx_pb.TensorProto]:
    """Every tensor that can hold data: initializers (sparse ones too) and node attributes, subgraphs included."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    for node in graph.node:
        for attribute in node.attribute:
            yield attribute.t
            yield from attribute.tensors
            for sparse in (attribute.sparse_tensor, *attribute.sparse_tensors):
                yield from (sparse.values, sparse.indices)
            for subgraph in (attribute.g, *attribute.graphs):
                yield from _tensors(subgraph)


def _location(tensor: onnx_pb.TensorProto) -> str:
    """The external data file of a tensor stored outside the graph file, else ''."""
    if tensor.data_location != onnx_pb.TensorProto.EXTERNAL:
        return ""
    return next((entry.value for entry in tensor.external_data if entry.key == "location"), "")


def _tensor(value: onnx_pb.ValueInfoProto) -> GraphTensor:
    if not value.type.HasField("tensor_type"):
        return GraphTensor(value.name, None, None, found="a non-tensor type (sequence, map or optional)")
    tensor = value.type.tensor_type
    elem = tensor.elem_type
    data_type = _DATA_TYPES.get(elem)  # type: ignore[call-overload]
    found = "" if data_type else _elem_name(elem)
    if not tensor.HasField("shape"):
        return GraphTensor(value.name, data_type, None, found)
    dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1 for d in tensor.shape.dim)
    return GraphTensor(value.name, data_type, dims, found)


def _elem_name(elem: int) -> str:
    try:
        return f"ONNX element type {onnx_pb.TensorProto.DataType.Name(elem)}"  # type: ignore[arg-type]
    except ValueError:
        return f"ONNX element type {elem}"
