"""``y = 2 * x`` by hand with the input taken through DLPack (no copy), as the generated model takes it."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = np.from_dlpack(pb_utils.get_input_tensor_by_name(request, "x"))
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("y", x * 2)]))
        return responses
