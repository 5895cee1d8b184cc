"""Sequence batching: stateful models, every request of one sequence reaches the same instance.

    repogen build tests/golden/sequence/app.py:models -o build/sequence

``SequenceBatcher`` writes Triton's ``sequence_batching``; the control inputs it names reach the
callable as extra inputs: ``START``/``END``/``READY`` as int32 0/1 flags and ``CORRID`` as the
sequence's correlation id. State lives in the instance of a bound class, keyed by that id.
``Accumulator`` uses the ``direct`` strategy (a batch slot per sequence; ``READY`` 0 marks an
empty slot); ``Tagger`` the ``oldest`` strategy, its own control names and no ``READY``.
"""

import numpy as np

from repogen import ModelConfig, Repository, SequenceBatcher, Tensor

models = Repository()


class Accumulator:
    """Per-sequence running sums."""

    def __init__(self):
        self.sums = {}

    def __call__(self, requests):
        results = []
        for request in requests:
            if not request["READY"].ravel()[0]:  # an empty batch slot of the direct strategy
                results.append({"total": np.zeros((1, 1), dtype=np.float32)})
                continue
            sequence = int(request["CORRID"].ravel()[0])
            if request["START"].ravel()[0]:
                self.sums[sequence] = 0.0
            self.sums[sequence] += float(request["x"].ravel()[0])
            results.append({"total": np.array([[self.sums[sequence]]], dtype=np.float32)})
            if request["END"].ravel()[0]:
                del self.sums[sequence]
        return results


models.bind(
    "Accumulator",
    infer_func=Accumulator,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=2, batcher=SequenceBatcher(max_sequence_idle_microseconds=5_000_000)),
)


class Tagger:
    """Numbers the requests of each sequence: 1, 2, 3, ..."""

    def __init__(self):
        self.seen = {}

    def __call__(self, requests):
        results = []
        for request in requests:
            sequence = int(request["SESSION"].ravel()[0])
            self.seen[sequence] = 1 if request["BEGIN"].ravel()[0] else self.seen.get(sequence, 0) + 1
            results.append({"index": np.full((len(request["SESSION"]), 1), self.seen[sequence], dtype=np.int32)})
        return results


models.bind(
    "Tagger",
    infer_func=Tagger,
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="index", dtype=np.int32, shape=(1,))],
    config=ModelConfig(
        max_batch_size=4,
        batcher=SequenceBatcher(
            start="BEGIN",
            end=None,
            ready=None,
            correlation_id="SESSION",
            strategy="oldest",
            max_candidate_sequences=4,
            max_queue_delay_microseconds=100,
        ),
    ),
)
