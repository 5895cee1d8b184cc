"""Models that wait, call and compute only what is asked.

    repogen build examples/waiting/app.py:models -o model_repository

* ``Lookup`` awaits a slow service: one instance has up to 32 requests in flight at once.
* ``Enrich`` calls ``Lookup`` for every word at once, with a timeout, handing its own request's parameters on.
* ``Cart`` adds up a shopper's items as a sequence of requests to the stateful ``Tally``: each shopper's own total.
* ``Describe`` computes its costly output only for clients that ask for it.
"""

import asyncio

import numpy as np

from repogen import ModelCallTimeout, ModelConfig, Repository, SequenceBatcher, Tensor

models = Repository()
WORD = [Tensor(name="word", dtype=bytes, shape=(1,))]
SCORE = [Tensor(name="score", dtype=np.float32, shape=(1,))]


@models.model("Lookup", inputs=WORD, outputs=SCORE, config=ModelConfig(batching=False, max_concurrency=32))
async def lookup(requests):
    (request,) = requests
    await asyncio.sleep(0.05)  # stands for an HTTP call or a database query: the instance serves others meanwhile
    boost = float(request.parameters.get("boost", 1))
    return [{"score": np.array([len(request["word"][0]) * boost], np.float32)}]


@models.model(
    "Enrich",
    inputs=[Tensor(name="words", dtype=bytes, shape=(-1,))],
    outputs=[Tensor(name="scores", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(batching=False),
)
async def enrich(requests):
    (request,) = requests
    lookup_now = lookup.parameters(request.parameters).timeout(1.0)  # its client's parameters, and a deadline
    calls = [lookup_now.infer_async(word=np.array([word], dtype=object)) for word in request["words"]]
    try:
        answers = await asyncio.gather(*calls)  # all at once: one call's time, not one per word
    except ModelCallTimeout:
        return [{"scores": np.full(len(calls), -1, np.float32)}]
    return [{"scores": np.concatenate([answer["score"] for answer in answers])}]


class Tally:
    """A running total per shopper: Triton's sequence batcher sends each sequence's requests to one instance."""

    def __init__(self):
        self.totals = {}

    def __call__(self, requests):
        results = []
        for request in requests:
            shopper = int(request["CORRID"][0, 0])
            if request["START"][0, 0]:
                self.totals[shopper] = 0.0
            self.totals[shopper] += float(request["amount"][0, 0])
            results.append({"total": np.array([[self.totals[shopper]]], np.float32)})
            if request["END"][0, 0]:
                del self.totals[shopper]
        return results


tally = models.bind(
    "Tally",
    Tally,
    inputs=[Tensor(name="amount", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=8, batcher=SequenceBatcher(strategy="oldest", ready=None)),
)


@models.model(
    "Cart",
    inputs=[Tensor(name="prices", dtype=np.float32, shape=(-1,)), Tensor(name="shopper", dtype=np.uint64, shape=(1,))],
    outputs=[Tensor(name="totals", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(batching=False),
)
async def cart(requests):
    (request,) = requests
    shopper, prices = int(request["shopper"][0]), request["prices"]
    totals = []
    for i, price in enumerate(prices):  # one sequence per cart: start on the first item, end on the last
        item = tally.sequence(shopper, start=i == 0, end=i == len(prices) - 1)
        totals.append((await item.infer_async(amount=np.array([[price]], np.float32)))["total"][0, 0])
    return [{"totals": np.array(totals, np.float32)}]


@models.model(
    "Describe",
    inputs=WORD,
    outputs=[Tensor(name="length", dtype=np.int32, shape=(1,)), Tensor(name="histogram", dtype=np.int32, shape=(26,))],
    config=ModelConfig(batching=False),
)
def describe(requests):
    results = []
    for request in requests:
        word = request["word"][0].decode().lower()
        result = {"length": np.array([len(word)], np.int32)}
        if "histogram" in request.requested_output_names:  # costly: only for clients that ask for it
            result["histogram"] = np.array([word.count(chr(ord("a") + i)) for i in range(26)], np.int32)
        results.append(result)
    return results
