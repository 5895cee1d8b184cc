"""Metrics of the callables' own (tests/integration/test_user_metrics_served.py): a counter with a label, a gauge and a
histogram, declared once here and updated from two models.

``Counted`` (a class, so that its instances can prove how their stubs ended) counts rows and characters into
``app_tokens{kind}``, sets ``app_last_rows`` to its last call's rows and observes the rows of each call into
``app_rows``; ``Other`` counts into the same ``app_tokens``, under its own model label. Each ``Counted`` instance's
``finalize`` and ``atexit`` handler write a file into ``$REPOGEN_TEST_FINALIZE_DIR``. Freed metric families crash a stub
(SIGSEGV) after its ``atexit`` handlers, while Python tears its modules down: the test reads the kernel's log for that
(faulthandler is left off: installed, it changed how those stubs ended, and none crashed).
"""

import atexit
import os
from pathlib import Path

import numpy as np

from repogen import Counter, Gauge, Histogram, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()

TOKENS = Counter("app_tokens", "Tokens the callables counted", ["kind"])
LAST_ROWS = Gauge("app_last_rows", "Rows of the last call")
ROWS = Histogram("app_rows", "Rows per call", buckets=[1, 2, 4])

TEXT = [Tensor(name="text", dtype=bytes, shape=(1,))]
N = [Tensor(name="n", dtype=np.int64, shape=(1,))]


class Counted:
    def __init__(self, context: ModelContext):
        self.name = context.instance_name
        atexit.register(self._mark, f"atexit-{self.name}")

    @batch
    def __call__(self, text):
        words = [t[0].decode() for t in text]
        TOKENS.labels(kind="word").inc(len(words))
        TOKENS.labels("char").inc(sum(len(w) for w in words))
        LAST_ROWS.set(len(words))
        ROWS.observe(len(words))
        return {"n": np.array([[len(w)] for w in words], dtype=np.int64)}

    def finalize(self):
        self._mark(f"finalize-{self.name}")

    @staticmethod
    def _mark(name: str) -> None:
        folder = os.environ.get("REPOGEN_TEST_FINALIZE_DIR")
        if folder:
            with open(Path(folder, name), "a", encoding="utf-8") as file:
                file.write("1\n")


models.bind("Counted", Counted, inputs=TEXT, outputs=N, config=ModelConfig(max_batch_size=8))


@models.model("Other", inputs=TEXT, outputs=N, config=ModelConfig(max_batch_size=8))
@batch
def other(text):
    TOKENS.labels(kind="word").inc(len(text))
    return {"n": np.ones((len(text), 1), dtype=np.int64)}
