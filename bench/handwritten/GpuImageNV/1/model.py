"""GpuImage by hand, as NVIDIA's own PyTorch handler (pytorch_backend ``src/model.py``, r24.10) writes it: each
request's images through DLPack and ``.to(device)`` on their own, the batch joined with ``torch.cat`` on the
device, split with ``torch.split``, and each request's scores sent with ``pb_utils.Tensor.from_dlpack`` (one wait
per output tensor; the server then copies each GPU buffer to host memory, blocking). The departures from the
handler are GpuTorchNV's: no ``torch.compile``, one ``torch.cat``, ``torch.inference_mode`` per ``execute``.
"""

import json

import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")
        config = json.loads(args["model_config"])
        self.inputs = [io["name"] for io in config["input"]]
        self.outputs = [io["name"] for io in config["output"]]
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(3, 1000).to(self.device).eval()

    def forward(self, image):
        return (self.net(image.mean(dim=(2, 3))),)

    def execute(self, requests):
        with torch.inference_mode():
            gathered, sections = [[] for _ in self.inputs], []
            for request in requests:
                for j, name in enumerate(self.inputs):
                    tensor = pb_utils.get_input_tensor_by_name(request, name).to_dlpack()
                    gathered[j].append(torch.from_dlpack(tensor).to(self.device))
                sections.append(gathered[0][-1].shape[0])
            outputs = self.forward(*(torch.cat(parts) for parts in gathered))
            scattered = [torch.split(output, sections) for output in outputs]
            responses = []
            for i in range(len(requests)):
                tensors = [pb_utils.Tensor.from_dlpack(name, scattered[j][i]) for j, name in enumerate(self.outputs)]
                responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            return responses
