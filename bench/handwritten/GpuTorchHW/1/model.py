"""GpuTorch by hand, as Triton's own PyTorch handler writes it: inputs through DLPack onto the GPU, outputs sent
from it with ``pb_utils.Tensor.from_dlpack``."""

import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.device = f"cuda:{args['model_instance_device_id']}"
        torch.manual_seed(0)
        self.net = torch.nn.Linear(256, 256).to(self.device).eval()

    def execute(self, requests):
        parts = [torch.from_dlpack(pb_utils.get_input_tensor_by_name(r, "x").to_dlpack()) for r in requests]
        with torch.no_grad():
            y = self.net(torch.cat(parts).to(self.device))
            norm = y.norm(dim=1, keepdim=True)
        responses, start = [], 0
        for part in parts:
            end = start + len(part)
            tensors = [
                pb_utils.Tensor.from_dlpack("y", y[start:end]),
                pb_utils.Tensor.from_dlpack("norm", norm[start:end]),
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start = end
        return responses
