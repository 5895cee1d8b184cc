"""GpuNumpy by hand: numpy in and out, the requests concatenated into one forward on the instance's GPU."""

import numpy as np
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = "cuda:" + device_id if kind == "GPU" else "cpu"  # "cpu": tests/unit/bench/test_gpu_twins.py
        torch.manual_seed(0)
        self.net = torch.nn.Linear(256, 256).to(self.device).eval()

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "x").as_numpy() for r in requests]
        with torch.no_grad():
            y = self.net(torch.from_numpy(np.concatenate(parts)).to(self.device))
            norm = y.norm(dim=1, keepdim=True).cpu().numpy()
            y = y.cpu().numpy()
        responses, start = [], 0
        for part in parts:
            end = start + len(part)
            tensors = [pb_utils.Tensor("y", y[start:end]), pb_utils.Tensor("norm", norm[start:end])]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start = end
        return responses
