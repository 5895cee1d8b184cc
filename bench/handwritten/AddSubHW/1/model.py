"""Hand-written add/sub of two tensors: the cold-start baseline (bench/repos.py copies it 20 times)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "a").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "b").as_numpy()
            outputs = [pb_utils.Tensor("add", a + b), pb_utils.Tensor("sub", a - b)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
