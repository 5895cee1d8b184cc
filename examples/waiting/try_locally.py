"""The waiting models in this process, no server (one call at a time here; the server overlaps them).

Run it with ``python examples/waiting/try_locally.py``.
"""

import numpy as np
from app import models

local = models.local()
words = np.array([b"a", b"tall", b"tree"], dtype=object)
print(local.infer("Enrich", {"words": words}, parameters={"boost": 2}))
print(local.infer("Cart", {"prices": np.array([3, 4.5, 1], np.float32), "shopper": np.array([7], np.uint64)}))
print(local.infer("Describe", {"word": np.array([b"banana"], dtype=object)}, outputs=["length"]))
