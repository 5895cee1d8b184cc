"""The same work as the generated ``Tokens``, as python_backend's docs write a stream that stops when cancelled:
``request.is_cancelled()`` asked before every token (a round trip to the server each)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "n").as_numpy()[0])
            for i in range(n):
                if request.is_cancelled():
                    break
                token = pb_utils.Tensor("token", np.array([i], np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[token]))
            sender.send(flags=final)
        return None
