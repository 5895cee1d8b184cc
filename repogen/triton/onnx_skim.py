"""An ONNX file's graph without its weights' data, read from the file field by field.

A graph below protobuf's 2 GB limit may carry its weights inside (``raw_data`` and the typed ``*_data``
fields of its initializers): parsing the file whole would hold all of it in the build's memory to read a
few tensor names and shapes. Here the protobuf wire format is walked with seeks: every field is copied as
it is except the data of ``graph.initializer``, which is skipped, so what is parsed afterwards is the
graph's structure alone. Field numbers are ONNX's (``proto/onnx_graph.proto``).
"""

from __future__ import annotations

from typing import BinaryIO

_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER = 5  # GraphProto.initializer (TensorProto)
_TENSOR_DATA = frozenset({3, 4, 5, 6, 7, 9, 10, 11, 12})  # segment, *_data, raw_data, doc_string
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class SkimError(ValueError):
    """The bytes are not a protobuf message (where ``ParseFromString`` would raise ``DecodeError``)."""


def skim_model(handle: BinaryIO, size: int) -> bytes:
    """The ModelProto in ``handle`` (``size`` bytes), its initializers' data left out."""
    return _message(handle, size, lambda number: _graph if number == _MODEL_GRAPH else None)


def _graph(handle: BinaryIO, size: int) -> bytes:
    return _message(handle, size, lambda number: _tensor if number == _GRAPH_INITIALIZER else None)


def _tensor(handle: BinaryIO, size: int) -> bytes:
    return _message(handle, size, lambda number: None, skip=_TENSOR_DATA)


def _message(handle: BinaryIO, size: int, nested: object, skip: frozenset[int] = frozenset()) -> bytes:
    """The fields of the message in the next ``size`` bytes, as bytes; ``nested(number)`` rewrites a field's
    value (a message of its own), fields in ``skip`` are left out unread."""
    out = bytearray()
    end = handle.tell() + size
    while handle.tell() < end:
        key = _varint(handle)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            value = _encode(_varint(handle))
        elif kind in (_I64, _I32):
            value = _read(handle, 8 if kind == _I64 else 4)
        elif kind == _LEN:
            length = _varint(handle)
            if number in skip:
                handle.seek(length, 1)
                continue
            rewrite = nested(number)  # type: ignore[operator]
            data = rewrite(handle, length) if rewrite is not None else _read(handle, length)
            value = _encode(len(data)) + data
        else:
            raise SkimError(f"wire type {kind} of field {number} (groups are not ONNX's)")
        if number not in skip:
            out += _encode(key) + value
    if handle.tell() != end:
        raise SkimError("a field runs past the end of its message")
    return bytes(out)


def _read(handle: BinaryIO, count: int) -> bytes:
    data = handle.read(count)
    if len(data) != count:
        raise SkimError("the file ends inside a field")
    return data


def _varint(handle: BinaryIO) -> int:
    value, shift = 0, 0
    while True:
        byte = handle.read(1)
        if not byte:
            raise SkimError("the file ends inside a varint")
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return value
        shift += 7
        if shift > 63:
            raise SkimError("a varint longer than 10 bytes")


def _encode(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
