"""GpuImage by hand, as a careful hand writes it for network clients: the requests' images joined with numpy
straight into page-locked memory the instance keeps (max_batch_size images), one ``non_blocking`` copy to the
device, the forward, one ``non_blocking`` copy of the scores into page-locked memory, one wait, and numpy views
of it per request (``pb_utils.Tensor(name, view)``)."""

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
        self.net = torch.nn.Linear(3, 1000).to(self.device).eval().requires_grad_(False)
        self.image, self.logits = self.pinned((rows, 3, 224, 224)), self.pinned((rows, 1000))

    def pinned(self, shape):
        tensor = torch.empty(shape, dtype=torch.float32, pin_memory=self.cuda)
        return tensor, tensor.numpy()

    def execute(self, requests):
        parts = [pb_utils.get_input_tensor_by_name(r, "image").as_numpy() for r in requests]
        rows = sum(len(part) for part in parts)
        np.concatenate(parts, out=self.image[1][:rows])
        image = self.image[0][:rows].to(self.device, non_blocking=True)
        self.logits[0][:rows].copy_(self.net(image.mean(dim=(2, 3))), non_blocking=True)
        if self.cuda:
            torch.cuda.current_stream(self.device).synchronize()
        responses, start = [], 0
        for part in parts:
            end = start + len(part)
            tensors = [pb_utils.Tensor("logits", self.logits[1][start:end])]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start = end
        return responses
