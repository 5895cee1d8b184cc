"""Hand-written BLS consumer: iterates Gen's stream with exec(decoupled=True), as the docs show."""

import faulthandler

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        # Not part of the docs' pattern: a crash of this stub prints its signal into the server's log, which
        # the test reads to tell the known crash from any other failure.
        faulthandler.enable()

    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "text")
            bls = pb_utils.InferenceRequest(
                model_name="Gen",
                inputs=[pb_utils.Tensor("text", text.as_numpy())],
                requested_output_names=["word"],
            )
            words = 0
            for response in bls.exec(decoupled=True):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                if response.output_tensors():
                    words += 1
            out = pb_utils.Tensor("words", np.array([words], dtype=np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
