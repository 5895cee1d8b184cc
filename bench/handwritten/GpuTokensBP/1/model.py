"""GpuTokens by hand, as a careful hand writes it for network clients: the prompt staged through page-locked
memory in one ``non_blocking`` copy, then each of the 64 tokens made on the GPU, copied ``non_blocking`` into a
page-locked host buffer the instance keeps, one wait, and sent as a numpy view of it (``pb_utils.Tensor``: the
stub copies it into the response as ``send`` runs, so the buffer is free for the next token). An async ``execute``
(python_backend r24.04+, a decoupled model: many at once on the stub's event loop), each stream letting the others in
after each token, as the generated model does; the page-locked buffers are shared safely, since no stream awaits
between filling one and the wait that empties it."""

import asyncio

import torch
import triton_python_backend_utils as pb_utils

TOKENS = 64


class TritonPythonModel:
    def initialize(self, args):
        kind, device_id = args["model_instance_kind"], args["model_instance_device_id"]
        self.device = torch.device("cuda:" + device_id if kind == "GPU" else "cpu")
        self.cuda = self.device.type == "cuda"
        torch.manual_seed(0)  # the generated model's weights
        self.net = torch.nn.Linear(16, 16).to(self.device).eval().requires_grad_(False)
        self.prompt = torch.empty(16, dtype=torch.float32, pin_memory=self.cuda)
        self.token = torch.empty(1, dtype=torch.int32, pin_memory=self.cuda)
        self.prompt_view, self.token_view = self.prompt.numpy(), self.token.numpy()

    async def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        stream = torch.cuda.current_stream(self.device) if self.cuda else None
        for request in requests:
            sender = request.get_response_sender()
            self.prompt_view[:] = pb_utils.get_input_tensor_by_name(request, "prompt").as_numpy()
            state = self.prompt.to(self.device, non_blocking=True)
            for _ in range(TOKENS):
                state = torch.tanh(self.net(state))
                self.token.copy_(state.argmax().to(torch.int32).reshape(1), non_blocking=True)
                if stream is not None:
                    stream.synchronize()
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("token", self.token_view)]))
                await asyncio.sleep(0)  # the other streams' turn
            sender.send(flags=final)
        return None
