"""GpuTorch by hand, as a careful hand writes it for network clients: the requests' host arrays joined with numpy
straight into page-locked memory the instance keeps, one ``non_blocking`` copy to the device, the forward, one
``non_blocking`` copy per output into page-locked memory, one wait, and numpy views of it per request
(``pb_utils.Tensor(name, view)``: the server has no GPU buffer to call back for)."""

import json

import numpy as np
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")
        self.cuda = self.device.type == "cuda"
        rows = json.loads(args["model_config"])["max_batch_size"]  # the batcher never sends more
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(256, 256).to(self.device).eval().requires_grad_(False)
        self.x, self.y, self.norm = (self.pinned((rows, width)) for width in (256, 256, 1))

    def pinned(self, shape):
        tensor = torch.empty(shape, dtype=torch.float32, pin_memory=self.cuda)
        return tensor, tensor.numpy()

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "x").as_numpy() for r in requests]
        rows = sum(len(part) for part in parts)
        np.concatenate(parts, out=self.x[1][:rows])
        y = self.net(self.x[0][:rows].to(self.device, non_blocking=True))
        self.y[0][:rows].copy_(y, non_blocking=True)
        self.norm[0][:rows].copy_(y.norm(dim=1, keepdim=True), non_blocking=True)
        if self.cuda:
            torch.cuda.current_stream(self.device).synchronize()
        responses, start = [], 0
        for part in parts:
            end = start + len(part)
            tensors = [pb_utils.Tensor("y", self.y[1][start:end]), pb_utils.Tensor("norm", self.norm[1][start:end])]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start = end
        return responses
