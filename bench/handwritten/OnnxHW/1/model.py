"""What a careful user writes by hand to serve an ONNX graph on the Python backend: one ``session.run`` per batch.

The baseline ``models.onnx(..., backend="python")`` must match. ``bench/onnx_bench.py`` copies this
directory beside each generated ONNX model it is compared with, with that model's config (renamed),
``model.onnx`` and the onnxruntime the build shipped (``packages``). The session gets the generated
model's default threads (its ``intra_op_thread_count``, else the cores divided among the model's
instances) and onnxruntime's defaults otherwise, as a user who has not measured them leaves them.
"""

import json
import os
import platform
import sys

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        version = os.path.join(args["model_repository"], args["model_version"])
        tag = "cp{}{}-{}".format(*sys.version_info[:2], platform.machine())  # the tree for this Python (x86_64)
        sys.path.insert(0, os.path.join(version, "packages", tag))
        import onnxruntime

        config = json.loads(args["model_config"])
        instances = sum(int(group.get("count", 1)) for group in config.get("instance_group", [])) or 1
        threads = config.get("parameters", {}).get("intra_op_thread_count", {}).get("string_value")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = int(threads or max(1, len(os.sched_getaffinity(0)) // instances))
        self.session = onnxruntime.InferenceSession(
            os.path.join(version, "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def execute(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(request, "x").as_numpy() for request in requests]
        (y,) = self.session.run(["y"], {"x": np.concatenate(xs) if len(xs) > 1 else xs[0]})
        responses, start = [], 0
        for x in xs:
            end = start + len(x)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("y", y[start:end])]))
            start = end
        return responses
