"""Forwards every request to ``Trivial`` with a synchronous BLS call: measures one BLS hop."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x")
            inner = pb_utils.InferenceRequest(
                model_name="Trivial", requested_output_names=["y"], inputs=[pb_utils.Tensor("x", x.as_numpy())]
            ).exec()
            if inner.has_error():
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=inner.error()))
                continue
            y = pb_utils.get_output_tensor_by_name(inner, "y")
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("y", y.as_numpy())]))
        return responses
