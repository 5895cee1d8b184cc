"""PyTriton's token-streaming example, as people copy it (``huggingface_dialogpt_streaming_pytorch``): an instance
holding a language model, a streamer whose queue the model's ``generate`` fills from an executor's thread, and a
``@batch`` generator reading the streamer. A small stand-in makes the tokens (a token every DELAY_S seconds), so
that the test measures what a cancelled stream still costs without downloading weights.

``Bot`` adds the one line docs/pytriton.md shows (``stopping_criteria=[stream_cancelled()]``); ``BotAsIs`` is the
example as it is. Each counts, in its own stub, the tokens its ``generate`` made and those made after its stream
was cancelled; ``max_tokens=-1`` asks for the count (after the executor's work is done).
"""

import concurrent.futures
import queue
import time

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch, stream_cancelled

models = Repository()

DELAY_S = 0.02
REPORT = -1


class TokenStreamer:
    """What ``transformers.TextIteratorStreamer`` is to ``generate``: a queue it fills, iterated by the reader."""

    def __init__(self, timeout=None):
        self.text_queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout

    def put(self, text):
        self.text_queue.put(text, timeout=self.timeout)

    def end(self):
        self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self):
        return self

    def __next__(self):
        value = self.text_queue.get(timeout=self.timeout)
        if value == self.stop_signal:
            raise StopIteration()
        return value


class TinyLM:
    """``generate`` as transformers runs it: a token at a time into the streamer, the stopping criteria asked after
    each one, the streamer ended at the end."""

    def __init__(self):
        self.made = self.after_cancel = 0

    def generate(self, input_ids, streamer, max_length, cancelled, stopping_criteria=()):
        for index in range(max_length):
            time.sleep(DELAY_S)
            self.made += 1
            self.after_cancel += bool(cancelled)
            streamer.put(f"{input_ids[0]}:{index}")
            if any(bool(criterion(input_ids, None)) for criterion in stopping_criteria):
                break
        streamer.end()


class StreamingBot:
    def __init__(self, stop_on_cancel):
        self.model = TinyLM()
        self.streamer = TokenStreamer(timeout=10.0)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="streaming_bot")
        self.stop_on_cancel = stop_on_cancel

    @batch
    def __call__(self, new_inputs, max_tokens):
        n = int(max_tokens[0, 0])
        if n == REPORT:
            yield self._report()
            return
        cancelled = stream_cancelled()
        generate_kwargs = dict(
            input_ids=[v.decode() for v in new_inputs[:, 0]], streamer=self.streamer, max_length=n, cancelled=cancelled
        )
        if self.stop_on_cancel:
            generate_kwargs["stopping_criteria"] = [cancelled]  # the one line: generate stops with the stream
        generate_future = self._executor.submit(self.model.generate, **generate_kwargs)
        for token in self.streamer:
            yield {"response": np.char.encode([token], "utf-8")[np.newaxis, ...]}
        generate_future.result()

    def _report(self):
        self._executor.submit(lambda: None).result()  # generate's work, cancelled or not, is done
        while not self.streamer.text_queue.empty():  # what it made for a reader who left is nobody's
            self.streamer.text_queue.get_nowait()
        counts = [self.model.made, self.model.after_cancel]
        self.model.made = self.model.after_cancel = 0
        return {"response": np.array([[str(counts).encode()]], dtype=object)}


for name, stop in (("Bot", True), ("BotAsIs", False)):
    models.bind(
        model_name=name,
        infer_func=StreamingBot(stop),
        inputs=[
            Tensor(name="new_inputs", dtype=bytes, shape=(1,)),
            Tensor(name="max_tokens", dtype=np.int32, shape=(1,)),
        ],
        outputs=[Tensor(name="response", dtype=bytes, shape=(1,))],
        config=ModelConfig(decoupled=True),
        strict=True,
    )
