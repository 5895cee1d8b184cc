"""The generated ``WaitingRR`` written by hand: a request/response model (plain HTTP and gRPC clients) whose waits
overlap. python_backend runs no coroutine of a non-decoupled model concurrently, so the model runs an event loop of
its own and answers each request through its response sender (r24.06+)."""

import asyncio
import threading

import triton_python_backend_utils as pb_utils

WAIT_S = 0.02  # bench/apps/app.py's


class TritonPythonModel:
    def initialize(self, args):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            asyncio.run_coroutine_threadsafe(self.answer(request.get_response_sender(), x), self.loop)
        return None

    async def answer(self, sender, x):
        await asyncio.sleep(WAIT_S)
        response = pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("y", x)])
        sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
