"""What python_backend's docs show for a model that waits (r24.04+): an async ``execute`` of a decoupled model, which
the stub runs on its own event loop, many requests at once. The same work as the generated ``Waiting``."""

import asyncio

import triton_python_backend_utils as pb_utils

WAIT_S = 0.02  # bench/apps/app.py's


class TritonPythonModel:
    async def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            await asyncio.sleep(WAIT_S)
            sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("y", x)]), flags=final)
        return None
