"""PyTriton's huggingface_dialogpt_streaming_pytorch, without the model: one object holding live objects.

``StreamingBot`` holds what PyTriton's does (a streamer with a queue inside, an executor that runs the
producer per request) and a lock, a condition over it and an event. They are in their initial state
when the app is built, so the server makes each anew with the same settings. Both models are bound to
the one bot, as PyTriton's ``online_learning_mnist`` binds ``train`` and ``infer`` to one object: the
build warns that each model gets its own copy (tests/integration/test_live_objects_served.py shows it).
"""

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch


class Streamer:
    """Like ``transformers.TextIteratorStreamer``: the producer puts text, the consumer iterates until the end."""

    def __init__(self, timeout=None):
        self.text_queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout

    def put(self, text):
        self.text_queue.put(text)

    def end(self):
        self.text_queue.put(self.stop_signal)

    def __iter__(self):
        return self

    def __next__(self):
        value = self.text_queue.get(timeout=self.timeout)
        if value is self.stop_signal:
            raise StopIteration()
        return value


class StreamingBot:
    def __init__(self):
        self.lock = threading.Lock()
        self.served_cond = threading.Condition(self.lock)
        self.stopped = threading.Event()
        self.jobs = queue.Queue(maxsize=8)
        self.streamer = Streamer(timeout=10.0)
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bot")
        self.served = 0

    def _generate(self, words):
        for word in words:
            if self.stopped.is_set():
                break
            self.streamer.put(word.upper())
        self.streamer.end()
        return threading.current_thread().name

    def _count(self):
        with self.served_cond:  # the condition's lock is self.lock, in the server too
            self.served += 1
            self.served_cond.notify_all()
            return self.served, self.served_cond._lock is self.lock

    def _pool_threads(self):
        """Four tasks that overlap: the pool runs them on at most max_workers threads."""
        for future in [self._executor.submit(time.sleep, 0.05) for _ in range(4)]:
            future.result()
        return sorted(t.name for t in self._executor._threads)

    @batch
    def infer(self, text):
        replies, threads = [], []
        for row in text[:, 0]:
            self.jobs.put(row)
            generated = self._executor.submit(self._generate, self.jobs.get().decode().split())
            replies.append(" ".join(self.streamer).encode())
            threads.append(generated.result().encode())
        served, same_lock = self._count()
        pool = self._pool_threads()
        rows = len(replies)
        return {
            "reply": np.array(replies, dtype=object).reshape(rows, 1),
            "thread": np.array(threads, dtype=object).reshape(rows, 1),
            "pool": np.array([[",".join(pool).encode()]] * rows, dtype=object),
            "max_workers": np.full((rows, 1), self._executor._max_workers, dtype=np.int32),
            "served": np.full((rows, 1), served, dtype=np.int64),
            "same_lock": np.full((rows, 1), same_lock, dtype=np.bool_),
        }

    @batch
    def __call__(self, text):
        """Decoupled, as PyTriton's StreamingBot: one response per token the producer thread streams."""
        generated = self._executor.submit(self._generate, text[0, 0].decode().split())
        served, _ = self._count()
        for token in self.streamer:
            yield {"token": np.array([[token.encode()]], dtype=object), "served": np.array([[served]], dtype=np.int64)}
        generated.result()


bot = StreamingBot()
models = Repository()
TEXT = [Tensor(name="text", dtype=bytes, shape=(1,))]
models.bind(
    model_name="Bot",
    infer_func=bot.infer,
    inputs=TEXT,
    outputs=[
        Tensor(name="reply", dtype=bytes, shape=(1,)),
        Tensor(name="thread", dtype=bytes, shape=(1,)),
        Tensor(name="pool", dtype=bytes, shape=(1,)),
        Tensor(name="max_workers", dtype=np.int32, shape=(1,)),
        Tensor(name="served", dtype=np.int64, shape=(1,)),
        Tensor(name="same_lock", dtype=np.bool_, shape=(1,)),
    ],
    config=ModelConfig(max_batch_size=4),
    strict=True,
)
models.bind(
    model_name="BotStream",
    infer_func=bot,
    inputs=TEXT,
    outputs=[Tensor(name="token", dtype=bytes, shape=(1,)), Tensor(name="served", dtype=np.int64, shape=(1,))],
    config=ModelConfig(decoupled=True),
    strict=True,
)
