"""What a careful user writes by hand for the generated ``Tokens``: n tokens, then the final flag."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "n").as_numpy()[0])
            for i in range(n):
                token = pb_utils.Tensor("token", np.array([i], np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[token]))
            sender.send(flags=final)
        return None
