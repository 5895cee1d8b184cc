"""PyTriton's ``online_learning_mnist``, fixed for a static repository (docs/pytriton.md, "Models that share an
object"): one model that both trains and answers, instead of two models bound to one object.

The example binds ``MnistTrain`` and ``MnistInfer`` to two methods of one ``OnlineLearning``, a thread started
before binding that trains in the background and swaps the weights the other model serves. In a static repository
each model gets its own copy and a thread cannot travel, so the build refuses it. Here a class bound as the model
is constructed in the server, once per instance: its ``__init__`` makes the queue and the lock and starts the
training thread there, and one ``@batch`` ``__call__`` takes ``image`` and an optional ``target`` (with targets,
the batch is queued for training) and answers ``predictions`` and ``last_loss``. One instance, so one copy of the
weights is trained. Softmax regression in numpy stands in for the example's torch ``Net`` (the stock container's
Python has numpy only); the thread, queue, lock and weight swap are the example's.
"""

from __future__ import annotations

import threading
from queue import Queue

import numpy as np

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch

PIXELS = 28 * 28
CLASSES = 10


class OnlineLearning:
    def __init__(self) -> None:
        self.trained = np.zeros((PIXELS, CLASSES), dtype=np.float32)
        self.infer_weights = self.trained.copy()
        self.train_data_queue: Queue = Queue(maxsize=1000)
        self.lock = threading.Lock()
        self.lr, self.epoch_size, self.iter = 0.5, 4, 0  # an epoch: 4 batches, then the served weights are swapped
        self.last_loss = 0.0
        self.thread = threading.Thread(target=self.run, name="online_learning")  # not a daemon, as the example's
        self.thread.start()

    def run(self) -> None:
        while True:
            image, target = self.train_data_queue.get()
            if image is None:
                return
            x, labels = image.reshape(len(image), PIXELS), target.reshape(len(target))
            probabilities = _softmax(x @ self.trained)
            self.last_loss = float(-np.log(probabilities[np.arange(len(x)), labels] + 1e-9).mean())
            probabilities[np.arange(len(x)), labels] -= 1.0
            self.trained -= self.lr * (x.T @ probabilities) / len(x)
            self.iter += 1
            if self.iter >= self.epoch_size:  # the example's replace_inference_model, once per epoch
                with self.lock:
                    self.infer_weights = self.trained.copy()
                self.iter = 0

    @batch
    def __call__(self, image: np.ndarray, target: np.ndarray | None = None) -> dict[str, np.ndarray]:
        if target is not None:
            self.train_data_queue.put((image.copy(), target.copy()))
        with self.lock:
            weights = self.infer_weights
        predictions = _softmax(image.reshape(len(image), PIXELS) @ weights).astype(np.float32)
        return {"predictions": predictions, "last_loss": np.full((len(image), 1), self.last_loss, dtype=np.float32)}

    def finalize(self) -> None:
        """Stops the training thread when the server unloads the model: a thread left waiting on its queue would
        keep the instance's process from exiting."""
        self.train_data_queue.put((None, None))
        self.thread.join()


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


models = Repository()
models.bind(
    model_name="MnistOnline",
    infer_func=OnlineLearning,
    inputs=[
        Tensor(name="image", dtype=np.float32, shape=(1, 28, 28)),
        Tensor(name="target", dtype=np.int64, shape=(1,), optional=True),
    ],
    outputs=[
        Tensor(name="predictions", dtype=np.float32, shape=(-1,)),
        Tensor(name="last_loss", dtype=np.float32, shape=(1,)),
    ],
    config=ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(count=1, kind="KIND_CPU")]),
    strict=True,
)
