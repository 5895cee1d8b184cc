"""GpuTokens by hand in NVIDIA's idiom (pytorch_backend ``src/model.py``'s way with tensors, in a decoupled
model): the prompt through DLPack and ``.to(device)``, then each of the 64 tokens made on the GPU and sent
as it is with ``pb_utils.Tensor.from_dlpack`` (python_backend waits on the stream for each token, and the server
calls back into the stub to copy each token's GPU buffer to host memory). An async ``execute``, which python_backend
(r24.04+) runs on the stub's event loop for a decoupled model, many at once: each stream lets the others in after
each token, as the generated model does. ``inference_mode`` is entered per token, since a context held across an
``await`` would be left by another stream's exit."""

import asyncio

import torch
import triton_python_backend_utils as pb_utils

TOKENS = 64


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(16, 16).to(self.device).eval()

    async def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            prompt = pb_utils.get_input_tensor_by_name(request, "prompt").to_dlpack()
            state = torch.from_dlpack(prompt).to(self.device)
            for _ in range(TOKENS):
                with torch.inference_mode():
                    state = torch.tanh(self.net(state))
                    token = state.argmax().to(torch.int32).reshape(1)
                    tensor = pb_utils.Tensor.from_dlpack("token", token)
                    sender.send(pb_utils.InferenceResponse(output_tensors=[tensor]))
                await asyncio.sleep(0)  # the other streams' turn
            sender.send(flags=final)
        return None
