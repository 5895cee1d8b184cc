"""Writes the ONNX files the ``onnx`` golden family declares, standing in for a user's exported networks.

    <a Python with onnx>/bin/python tests/golden/onnx/make_graphs.py

Run once; the files are checked in beside ``app.py`` (a user's exports are files too). Their tensors
follow Triton's deployment tutorial, part 1: ``detection.onnx`` takes ``input_images:0`` FP32
[batch, h, w, 3] and returns two outputs; ``recognition.onnx`` takes a fixed-size grey crop.
The graphs compute little (a mean, a sigmoid): the golden shows what the build writes, not a network.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent


def _save(graph: onnx.GraphProto, name: str) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8,
                              producer_name="repogen golden")  # fmt: skip
    onnx.checker.check_model(model)
    onnx.save(model, HERE / name)


def detection(scale: float, name: str) -> None:
    nodes = [
        helper.make_node("ReduceMean", ["input_images:0"], ["mean"], axes=[3], keepdims=1),
        helper.make_node("Mul", ["mean", "scale"], ["scaled"]),
        helper.make_node("Sigmoid", ["scaled"], ["feature_fusion/Conv_7/Sigmoid:0"]),
        helper.make_node("Identity", ["input_images:0"], ["feature_fusion/concat_3:0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "detection",
        [helper.make_tensor_value_info("input_images:0", TensorProto.FLOAT, ["batch", "height", "width", 3])],
        [helper.make_tensor_value_info("feature_fusion/Conv_7/Sigmoid:0", TensorProto.FLOAT,
                                       ["batch", "height", "width", 1]),
         helper.make_tensor_value_info("feature_fusion/concat_3:0", TensorProto.FLOAT,
                                       ["batch", "height", "width", 3])],
        [helper.make_tensor("scale", TensorProto.FLOAT, [], [scale])],
    )  # fmt: skip
    _save(graph, name)


def recognition() -> None:
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["input.1"], ["308"], axes=[1, 2], keepdims=0)],
        "recognition",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 1, 32, 100])],
        [helper.make_tensor_value_info("308", TensorProto.FLOAT, [1, 100])],
    )
    _save(graph, "recognition.onnx")


if __name__ == "__main__":
    detection(1.0, "detection.onnx")
    detection(2.0, "detection_v2.onnx")
    recognition()
