"""Streaming: a generator callable is a decoupled model, one response per ``yield``.

    repogen build tests/golden/streaming/app.py:models -o build/streaming

The build sets ``model_transaction_policy { decoupled: true }`` for generators and async
generators; the runtime sends each yielded result as a response and the final flag after the
last one. Clients read the stream over gRPC (``stream_infer``). ``Lengths`` consumes a stream
through BLS: ``words.stream(...)`` iterates the responses of the decoupled model it calls.
"""

import asyncio

import numpy as np

from repogen import ModelConfig, Repository, Tensor

models = Repository()

TEXT = [Tensor(name="text", dtype=bytes, shape=(1,))]
UNBATCHED = ModelConfig(batching=False)


@models.model("Words", inputs=TEXT, outputs=[Tensor(name="word", dtype=bytes, shape=(1,))], config=UNBATCHED)
def words(requests):
    for word in requests[0]["text"][0].split():
        yield [{"word": np.array([word], dtype=object)}]


@models.model(
    "Countdown",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="tick", dtype=np.int32, shape=(1,))],
    config=UNBATCHED,
)
async def countdown(requests):
    for value in range(int(requests[0]["n"][0]), 0, -1):
        await asyncio.sleep(0.01)
        yield [{"tick": np.array([value], dtype=np.int32)}]


@models.model("Lengths", inputs=TEXT, outputs=[Tensor(name="lengths", dtype=np.int32, shape=(-1,))], config=UNBATCHED)
def lengths(requests):
    return [
        {"lengths": np.array([len(chunk["word"][0]) for chunk in words.stream(text=r["text"])], dtype=np.int32)}
        for r in requests
    ]
