"""GpuTokens by hand in NVIDIA's idiom (pytorch_backend ``src/model.py``'s way with tensors, in a decoupled
model): the prompt through DLPack and ``.to(device)``, then each of the 64 tokens made on the GPU and sent
as it is with ``pb_utils.Tensor.from_dlpack`` (python_backend waits on the stream for each token, and the server
calls back into the stub to copy each token's GPU buffer to host memory)."""

import torch
import triton_python_backend_utils as pb_utils

TOKENS = 64


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(16, 16).to(self.device).eval()

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        with torch.inference_mode():
            for request in requests:
                sender = request.get_response_sender()
                prompt = pb_utils.get_input_tensor_by_name(request, "prompt").to_dlpack()
                state = torch.from_dlpack(prompt).to(self.device)
                for _ in range(TOKENS):
                    state = torch.tanh(self.net(state))
                    token = state.argmax().to(torch.int32).reshape(1)
                    tensor = pb_utils.Tensor.from_dlpack("token", token)
                    sender.send(pb_utils.InferenceResponse(output_tensors=[tensor]))
                sender.send(flags=final)
        return None
