"""A shop's price lookup, operated as any Triton model: error codes, a response cache, a rate limit, metrics of its
own and traces across models (docs/operating.md walks through it). ``Describe`` alone is cached: it never fails
(Triton would cache a failure as an empty answer, docs/known-issues.md).

    repogen build examples/operating/app.py:models -o build/operating
"""

import numpy as np

from repogen import (
    Counter,
    Histogram,
    InstanceGroup,
    InvalidArgumentError,
    ModelConfig,
    NotFoundError,
    RateLimiter,
    Repository,
    ServerOptions,
    Tensor,
    UnavailableError,
    batch,
    traced_span,
)

models = Repository(server_options=ServerOptions(response_cache_byte_size=16 << 20))

PRICES = {1: 9.5, 2: 12.0, 3: 4.25}
LOOKUPS = Counter("shop_lookups", "Prices looked up, by outcome", ["outcome"])
QUANTITIES = Histogram("shop_quantity", "Items per line", buckets=[1, 5, 10])
DESCRIBED = Counter("shop_described", "Items the callable described")

ITEM = [Tensor(name="item", dtype=np.int64, shape=(1,)), Tensor(name="quantity", dtype=np.int64, shape=(1,))]
TOTAL = [Tensor(name="total", dtype=np.float64, shape=(1,))]


@models.model("Price", inputs=ITEM, outputs=TOTAL, config=ModelConfig(max_batch_size=8))
@batch
def price(item, quantity):
    if (quantity < 1).any():
        LOOKUPS.labels(outcome="refused").inc()
        raise InvalidArgumentError(f"quantity must be at least 1, found {quantity.min()}")  # HTTP 400
    unknown = [int(i) for i in item[:, 0] if int(i) not in PRICES]
    if unknown:
        LOOKUPS.labels(outcome="unknown").inc()
        raise NotFoundError(f"no item {unknown[0]}")  # HTTP 404
    LOOKUPS.labels(outcome="found").inc(len(item))
    for q in quantity[:, 0]:
        QUANTITIES.observe(q)
    with traced_span(None, "price-lookup"):  # a span of its own, under this request's
        return {"total": np.array([[PRICES[int(i)]] for i in item[:, 0]]) * quantity}


@models.model(
    "Describe",
    inputs=[Tensor(name="item", dtype=np.int64, shape=(1,))],
    outputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=8, response_cache=True),  # identical requests answered from Triton's cache
)
@batch
def describe(item):
    DESCRIBED.inc(len(item))  # counts what reaches the callable: cached answers do not
    return {"text": np.array([[f"item {int(i)}: {PRICES.get(int(i), 'no price')}".encode()] for i in item[:, 0]])}


@models.model(
    "Stock",
    inputs=[Tensor(name="item", dtype=np.int64, shape=(1,))],
    outputs=[Tensor(name="left", dtype=np.int64, shape=(1,))],
    config=ModelConfig(
        batching=False,
        instance_groups=[InstanceGroup(count=2, rate_limiter=RateLimiter(resources={"warehouse_link": 1}))],
    ),
)
def stock(requests):
    answers = []
    for request in requests:
        if int(request["item"][0]) == 3:
            raise UnavailableError("the warehouse does not answer")  # HTTP 503: retry later
        answers.append({"left": np.array([7], dtype=np.int64)})
    return answers


@models.model("Quote", inputs=ITEM, outputs=TOTAL, config=ModelConfig(max_batch_size=8))
def quote(requests):
    answers = []
    for request in requests:
        with traced_span(request, "quote"):
            answers.append(price(item=request["item"], quantity=request["quantity"]))  # BLS: codes and trace go on
    return answers
