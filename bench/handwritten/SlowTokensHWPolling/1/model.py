"""The generated ``SlowTokens`` by hand, stopping at the first token made after its request was cancelled,
as python_backend's docs poll.

Like it, it counts the tokens it makes and those made while ``request.is_cancelled()`` was already True (asked
at every token, so both do the same work); n = -1 answers ``[produced, after_cancel]`` since it was last asked.
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

POLL = True
SLOW_TOKEN_S = 0.02  # bench/apps/app.py's


class TritonPythonModel:
    def initialize(self, args):
        self.counts = [0, 0]

    def execute(self, requests):
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for request in requests:
            sender = request.get_response_sender()
            n = int(pb_utils.get_input_tensor_by_name(request, "n").as_numpy()[0])
            if n == -1:
                report, self.counts = np.array(self.counts, np.int32), [0, 0]
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("token", report)]), flags=final)
                continue
            for i in range(n):
                time.sleep(SLOW_TOKEN_S)
                self.counts[0] += 1
                cancelled = request.is_cancelled()
                self.counts[1] += cancelled
                if POLL and cancelled:
                    break
                token = pb_utils.Tensor("token", np.array([i], np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[token]))
            sender.send(flags=final)
        return None
