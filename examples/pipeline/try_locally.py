"""The pipeline in this process, no server: what a unit test of a pipeline does (milliseconds).

Run it with ``python examples/pipeline/try_locally.py``.
"""

import numpy as np
from app import models, tokenize

local = models.local()  # lowered and validated like a build
print(local.infer("Pipeline", {"text": np.array([[b"a good day"]], dtype=object)}))
print(list(local.stream("Ticker", {"text": np.array([b"one two"], dtype=object)})))
print(tokenize(text=np.array([[b"hi"]], dtype=object)))  # a handle called outside a server runs locally
