"""Hand-written decoupled model: n tokens 20 ms apart, never asking whether its request was cancelled.

It counts what it makes, and how much of it after ``is_cancelled()`` turned True (asked only to count);
``n = -1`` answers ``[produced, after_cancel, closed]`` since it was last asked.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

POLL = False


class TritonPythonModel:
    def initialize(self, args):
        self.stats = [0, 0, 0]

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "n").as_numpy()[0])
            if n == -1:
                report, self.stats = self.stats, [0, 0, 0]
                out = pb_utils.Tensor("token", np.array(report, np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]), flags=final)
                continue
            try:
                for i in range(n):
                    time.sleep(0.02)
                    self.stats[0] += 1
                    cancelled = request.is_cancelled()
                    self.stats[1] += cancelled
                    if POLL and cancelled:
                        break
                    sender.send(
                        pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("token", np.array([i], np.int32))])
                    )
            finally:
                self.stats[2] += 1
            sender.send(flags=final)
        return None
