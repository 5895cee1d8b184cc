"""Traces across models (tests/integration/test_tracing_served.py): an ensemble, a BLS pipeline, and callables' own
spans.

``Pipeline`` is an ensemble of ``Double`` then ``Inc``; ``Caller`` serves each request under a span of its own
(``traced_span``, PyTriton 0.7's), inside which it calls ``Double`` through BLS, then ``Inc`` from a ``@batch``
function's span (``Batched``).
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch, traced_span

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]
Z = [Tensor(name="z", dtype=np.float32, shape=(1,))]
BATCHED = ModelConfig(max_batch_size=4)


@models.model("Double", inputs=X, outputs=Y, config=BATCHED)
@batch
def double(x):
    return {"y": x * 2}


@models.model("Inc", inputs=Y, outputs=Z, config=BATCHED)
@batch
def inc(y):
    with traced_span(None, "inc-body", rows=len(y)):  # in a @batch function: the request being served
        return {"z": y + 1}


@models.model("Caller", inputs=X, outputs=Z, config=BATCHED)
def caller(requests):
    answers = []
    for request in requests:
        with traced_span(request, "caller-step", kind="bls"):
            doubled = double(x=request["x"])["y"]
        with request.traced_span("caller-inc"):
            answers.append({"z": inc(y=doubled)["z"]})
    return answers


def pipeline(x):
    return {"z": inc(y=double(x=x)["y"])["z"]}


models.ensemble("Pipeline", inputs=X, outputs=Z, config=BATCHED)(pipeline)
