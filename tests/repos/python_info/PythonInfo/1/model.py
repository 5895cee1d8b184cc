"""Reports the Python, numpy and process the backend stub runs: proves the serving pairing.

Hand-written rather than built by repogen, so it loads on any Python whatever built the tests.
"""

import json
import os
import sys

import numpy as np


class TritonPythonModel:
    def execute(self, requests):
        import triton_python_backend_utils as pb_utils  # members are attached after import: use them here

        info = {
            "version": list(sys.version_info[:3]),
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "numpy": np.__version__,
            "pid": os.getpid(),
        }
        out = np.array([json.dumps(info).encode()], dtype=object)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("info", out)]) for _ in requests]
