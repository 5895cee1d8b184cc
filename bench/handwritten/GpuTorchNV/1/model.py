"""GpuTorch by hand, as NVIDIA's own PyTorch handler (pytorch_backend ``src/model.py``, r24.10) writes it: each
request's input through DLPack and ``.to(device)`` on its own, the batch joined with ``torch.cat`` on the device,
split with ``torch.split``, and each request's slice of each output sent with ``pb_utils.Tensor.from_dlpack``
(python_backend waits on the stream once per output tensor; the server then calls back into the stub for each
GPU buffer and copies it to host memory, blocking, one tensor at a time).

Unlike the handler: no ``torch.compile`` around the join and split (the first batches would time the compiler),
one ``torch.cat`` of every request's tensor instead of a ``torch.cat`` per request (kinder to this twin), and
``torch.inference_mode`` entered per ``execute`` rather than once in ``initialize``.
"""

import json

import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")  # the handler's choice
        config = json.loads(args["model_config"])
        self.inputs = [io["name"] for io in config["input"]]
        self.outputs = [io["name"] for io in config["output"]]
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(256, 256).to(self.device).eval()

    def forward(self, x):
        y = self.net(x)
        return y, y.norm(dim=1, keepdim=True)

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
