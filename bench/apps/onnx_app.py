"""The ONNX side of the benchmark: graphs on the Python backend, against the same graph in a class model.

Built by a builder venv that holds onnx and onnxruntime (``bench/onnx_bench.py``): the graphs are
made here at import with ``onnx.helper`` (fixed seed, nothing downloaded).

* ``small``: an MLP 256 -> 512 -> 512 -> 16 (relu), the serving path dominates;
* ``big``: three 3x3 convolutions 8 -> 128 -> 128 -> 8 channels over a 32x32 image (170 M multiply-adds per
  sample on 166 K weights; 1.9 ms per sample at batch 1 on one core here), then a global average pool: the
  graph dominates.

Each graph is served three ways, under one config (max_batch_size 16, dynamic batcher, 200 µs queue
delay): ``Onnx<Size>`` is ``models.onnx(..., backend="python")``; ``Onnx<Size>Class`` is what a careful
user writes by hand without it, a class model that runs one ``session.run`` per batch (the requests
stacked, the outputs cut back), its session with the same thread count; ``Onnx<Size>Fused`` is
Python -> ONNX -> Python fused into one model (``fuse=True``), the Python steps trivial.

``OnnxBigX2`` serves the big graph from 2 instances with repogen's default threads (the cores
shared among the instances: 1 each on 2 cores); ``OnnxBigX2Ort`` the same with
``intra_op_thread_count: "0"``, onnxruntime's own default (a thread per core in each instance):
the measurement behind the default.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

from repogen import DynamicBatcher, InstanceGroup, ModelConfig, Repository, Tensor, batch

models = Repository()
SIZES = {"Small": (256, 512, 512, 16), "Mlp": (256, 2048, 2048, 2048, 2048, 16)}  # the MLPs' widths
BIG = ((8, 128, 128, 8), 32)  # the convolutions' channels, and the image's side
BIG_IO = (BIG[0][0] * BIG[1] ** 2, BIG[0][-1])  # 8192 inputs, 8 outputs per sample
MAX_BATCH = 16
CONFIG = ModelConfig(max_batch_size=MAX_BATCH, batcher=DynamicBatcher(max_queue_delay_microseconds=200))
_DIRECTORY = tempfile.mkdtemp(prefix="repogen-bench-onnx-")
atexit.register(shutil.rmtree, _DIRECTORY, True)


def convolutions(name: str, channels: tuple[int, ...], side: int) -> str:
    """x [batch, c0*side*side] (flat: perf_analyzer's --shape) -> 3x3 convolutions, Relu between -> global average
    pool -> y [batch, c_last]: much compute on small weights and small tensors, the graph dominates."""
    rng = np.random.default_rng(0)
    shape = helper.make_tensor("shape", TensorProto.INT64, [4], [-1, channels[0], side, side])
    nodes, weights, current = [helper.make_node("Reshape", ["x", "shape"], ["image"])], [shape], "image"
    for layer, (n_in, n_out) in enumerate(zip(channels, channels[1:], strict=False)):
        w = (rng.standard_normal((n_out, n_in, 3, 3)) / np.sqrt(9 * n_in)).astype(np.float32)
        weights.append(helper.make_tensor(f"w{layer}", TensorProto.FLOAT, w.shape, w.ravel()))
        nodes.append(helper.make_node("Conv", [current, f"w{layer}"], [f"c{layer}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{layer}"], [f"r{layer}"]))
        current = f"r{layer}"
    nodes += [helper.make_node("GlobalAveragePool", [current], ["pooled"]),
              helper.make_node("Flatten", ["pooled"], ["y"])]  # fmt: skip
    return _save(name, nodes, weights, channels[0] * side * side, channels[-1])


def mlp(name: str, widths: tuple[int, ...]) -> str:
    """x [batch, widths[0]] -> y [batch, widths[-1]]: MatMul + Add per layer, Relu between."""
    rng = np.random.default_rng(0)
    nodes, weights, current = [], [], "x"
    for layer, (n_in, n_out) in enumerate(zip(widths, widths[1:], strict=False)):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        b = np.zeros(n_out, np.float32)
        weights += [helper.make_tensor(f"w{layer}", TensorProto.FLOAT, w.shape, w.ravel()),
                    helper.make_tensor(f"b{layer}", TensorProto.FLOAT, b.shape, b)]  # fmt: skip
        last = layer == len(widths) - 2
        nodes += [helper.make_node("MatMul", [current, f"w{layer}"], [f"m{layer}"]),
                  helper.make_node("Add", [f"m{layer}", f"b{layer}"], ["y" if last else f"a{layer}"])]  # fmt: skip
        if not last:
            nodes.append(helper.make_node("Relu", [f"a{layer}"], [f"r{layer}"]))
            current = f"r{layer}"
    return _save(name, nodes, weights, widths[0], widths[-1])


def _save(name: str, nodes: list, weights: list, x_width: int, y_width: int) -> str:
    """The graph x [batch, x_width] -> y [batch, y_width] as ``<name>.onnx`` beside this app (opset 13)."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", x_width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", y_width])],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = os.path.join(_DIRECTORY, f"{name}.onnx")
    onnx.save(model, path)
    return path


class HandBatched:
    """One onnxruntime session per instance (on the graph shipped as ``GRAPH``); each batch stacked into one run."""

    GRAPH = ""
    THREADS = 0  # 0: what OnnxSession chooses by default, the cores this process may use divided among INSTANCES
    INSTANCES = 1

    def __init__(self, context):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.THREADS or max(1, len(os.sched_getaffinity(0)) // self.INSTANCES)
        self.session = onnxruntime.InferenceSession(context.path(self.GRAPH), sess_options=options,
                                                    providers=["CPUExecutionProvider"])  # fmt: skip

    def __call__(self, requests):
        xs = [request["x"] for request in requests]
        (y,) = self.session.run(["y"], {"x": np.concatenate(xs) if len(xs) > 1 else xs[0]})
        results, start = [], 0
        for x in xs:
            results.append({"y": y[start : start + len(x)]})
            start += len(x)
        return results


# Generated variants of each MLP beside the defaults, the measurements behind them (bench/onnx_ab.py):
# onnxruntime's spin-wait back on; onnxruntime's own thread count (with 2 instances: 2 threads each on 2 cores).
VARIANTS = {
    "Spin": {"session.intra_op.allow_spinning": "1"},
    "Ort": {"intra_op_thread_count": "0"},
    "OrtSpin": {"intra_op_thread_count": "0", "session.intra_op.allow_spinning": "1"},
}


def _pipeline(pre, network, post):
    def pipeline(x):
        return {"y": post(y=network(x=pre(x=x)["x"])["y"])["y"]}

    return pipeline


GRAPHS = {"Small": mlp("small", SIZES["Small"]), "Mlp": mlp("mlp", SIZES["Mlp"]), "Big": convolutions("big", *BIG)}
_two = [InstanceGroup(count=2)]
for _size, (_inputs, _outputs) in {"Small": (256, 16), "Mlp": (256, 16), "Big": BIG_IO}.items():
    _graph = GRAPHS[_size]
    _x = [Tensor(name="x", dtype=np.float32, shape=(_inputs,))]
    _y = [Tensor(name="y", dtype=np.float32, shape=(_outputs,))]
    _onnx = models.onnx(f"Onnx{_size}", _graph, config=CONFIG, backend="python")
    _class = type(f"HandBatched{_size}", (HandBatched,), {"GRAPH": os.path.basename(_graph)})
    models.bind(f"Onnx{_size}Class", _class, inputs=_x, outputs=_y, config=CONFIG, files=[_graph])
    _pre = models.bind(f"Onnx{_size}Pre", batch(lambda x: {"x": x}), inputs=_x, outputs=_x, config=CONFIG)
    _post = models.bind(f"Onnx{_size}Post", batch(lambda y: {"y": y}), inputs=_y, outputs=_y, config=CONFIG)
    models.ensemble(f"Onnx{_size}Fused", inputs=_x, outputs=_y, config=CONFIG, fuse=True)(_pipeline(_pre, _onnx, _post))
    if _size != "Big":  # 2 instances of each MLP: generated, and the class with the same threads per instance
        _config2 = dataclasses.replace(CONFIG, instance_groups=_two)
        models.onnx(f"Onnx{_size}I2", _graph, config=_config2, backend="python")
        _class2 = type(f"HandBatched{_size}I2", (HandBatched,), {"GRAPH": os.path.basename(_graph), "INSTANCES": 2})
        models.bind(f"Onnx{_size}ClassI2", _class2, inputs=_x, outputs=_y, config=_config2, files=[_graph])
        for _name, _params in VARIANTS.items():
            for _suffix, _cfg in (("", CONFIG), ("I2", _config2)):
                _variant = dataclasses.replace(_cfg, parameters=_params)
                models.onnx(f"Onnx{_size}{_suffix}{_name}", _graph, config=_variant, backend="python")

models.onnx("OnnxBigX2", GRAPHS["Big"], config=dataclasses.replace(CONFIG, instance_groups=_two), backend="python")
_ort_threads = dataclasses.replace(CONFIG, instance_groups=_two, parameters={"intra_op_thread_count": "0"})
models.onnx("OnnxBigX2Ort", GRAPHS["Big"], config=_ort_threads, backend="python")

# Counted by callgrind (bench/run.py --instructions): one intra-op thread, so no thread of onnxruntime's pool
# spins while the stub's instructions are counted; 1 request per execute, and exactly 4 (the batcher holds
# requests until 4 rows wait, as bench/apps/app.py's DoubleX<n>). bench/onnx_bench.py adds the hand-written
# model.py beside each (OnnxSmallHWT1, ...), under the same config.
_single = {"intra_op_thread_count": "1"}
_held = DynamicBatcher(preferred_batch_size=[4], max_queue_delay_microseconds=10_000_000)
for _size in ("Small", "Mlp"):
    _x, _y = [Tensor(name="x", dtype=np.float32, shape=(256,))], [Tensor(name="y", dtype=np.float32, shape=(16,))]
    _file = os.path.basename(GRAPHS[_size])
    for _suffix, _config in (("T1", CONFIG), ("X4", dataclasses.replace(CONFIG, batcher=_held))):
        _config = dataclasses.replace(_config, parameters=_single)
        models.onnx(f"Onnx{_size}{_suffix}", GRAPHS[_size], config=_config, backend="python")
        _one_thread = type(f"HandBatched{_size}{_suffix}", (HandBatched,), {"GRAPH": _file, "THREADS": 1})
        models.bind(f"Onnx{_size}Class{_suffix}", _one_thread, inputs=_x, outputs=_y, config=_config,
                    files=[GRAPHS[_size]])  # fmt: skip
