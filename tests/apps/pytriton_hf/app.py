"""PyTriton's three Hugging Face examples on CPU, as their ``server.py`` files bind them, imports swapped.

``huggingface_dialogpt_streaming_pytorch`` (a ``StreamingBot`` holding DialoGPT, its tokenizer, a
``TextIteratorStreamer`` and a ``ThreadPoolExecutor``: a decoupled ``@batch`` generator with an optional input),
``huggingface_resnet_pytorch`` (module-level model and feature extractor, JPEG bytes in, a label out) and
``huggingface_bart_pytorch`` (a zero-shot ``pipeline`` at module level). The code is written here, not copied;
what it does is what each example does. The checkpoints are the small stand-ins ``make_models.py`` writes, found
by ``from_pretrained`` under the examples' own names: build this with the current directory holding them. The
examples bind inside ``with Triton() as triton:`` in ``main()``; here the binds are at module level, onto one
``Triton``, so that ``repogen build app.py:triton`` finds them (docs/pytriton.md says why).
"""

from __future__ import annotations

import concurrent.futures
import io
import logging
import queue
import typing

import numpy as np
import torch
from PIL import Image
from transformers import (
    AutoFeatureExtractor,
    AutoModelForCausalLM,
    AutoTokenizer,
    ResNetForImageClassification,
    TextIteratorStreamer,
    pipeline,
)

from repogen import DynamicBatcher, ModelConfig, Tensor, Triton, batch, stream_cancelled

logger = logging.getLogger("tests.apps.pytriton_hf")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# huggingface_dialogpt_streaming_pytorch
class StreamingBot:
    def __init__(self, model_name: str, *, max_length: int = 1000, timeout_s: float | None = None) -> None:
        self.model = AutoModelForCausalLM.from_pretrained(model_name)
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.tokenizer.pad_token = self.tokenizer.eos_token
        self._timeout_s = timeout_s
        self._max_length = max_length
        self.streamer = TextIteratorStreamer(
            self.tokenizer, timeout=self._timeout_s, skip_prompt=True, skip_special_tokens=True
        )
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="streaming_bot")

    @batch
    def __call__(self, new_inputs, chat_history=None) -> typing.Any:
        inputs_kwargs = self._prepare_inputs(new_inputs, chat_history)
        generate_kwargs = dict(
            **inputs_kwargs,
            streamer=self.streamer,
            max_length=self._max_length,
            pad_token_id=self.tokenizer.pad_token_id,
            stopping_criteria=[stream_cancelled()],  # docs/pytriton.md: generate stops with a cancelled stream
        )
        generate_future = self._executor.submit(self.model.generate, **generate_kwargs)
        try:
            for token in self.streamer:
                yield {"response": np.char.encode([token], "utf-8")[np.newaxis, ...]}
        except queue.Empty:
            generate_future.cancel()
            raise TimeoutError(f"Timeout occurred during model generation (timeout_s={self._timeout_s}).") from None
        generate_future.result()

    def _prepare_inputs(self, new_inputs, chat_history):
        new_inputs = np.char.decode(new_inputs.astype("bytes"), "utf-8")
        bot_inputs = np.char.add(new_inputs, self.tokenizer.eos_token)
        if chat_history:
            chat_history = np.char.decode(chat_history.astype("bytes"), "utf-8")
            bot_inputs = np.char.add(chat_history, bot_inputs)
        bot_inputs = bot_inputs[..., 0].tolist()
        return self.tokenizer(bot_inputs, return_tensors="pt", padding=True)


# huggingface_resnet_pytorch
feature_extractor = AutoFeatureExtractor.from_pretrained("microsoft/resnet-50")
model = ResNetForImageClassification.from_pretrained("microsoft/resnet-50").to(DEVICE)


@batch
def _classify_image(image: np.ndarray):
    images = [Image.open(io.BytesIO(img.tobytes())) for img in image]
    inputs = feature_extractor(images, return_tensors="pt")
    for name, value in inputs.items():
        inputs[name] = value.to(DEVICE)
    with torch.no_grad():
        logits = model(**inputs).logits.to("cpu")
    labels = []
    for logit in logits:
        label = np.char.encode(model.config.id2label[logit.argmax(-1).item()], "utf-8")
        labels.append([label])
    return {"label": np.array(labels)}


# huggingface_bart_pytorch
CLASSIFIER = pipeline(
    "zero-shot-classification", model="facebook/bart-large-mnli", device=0 if DEVICE == "cuda" else -1
)
LABELS = ["travel", "cooking", "dancing", "sport", "music", "entertainment", "festival", "movie", "literature"]


@batch
def _classify_text(sequence: np.ndarray):
    sequence = np.char.decode(sequence.astype("bytes"), "utf-8").tolist()
    result_labels = [[result["labels"][0]] for result in CLASSIFIER(sequence, LABELS)]
    return {"label": np.char.encode(result_labels, "utf-8")}


triton = Triton()
triton.bind(
    model_name="DialoGPT-small",
    infer_func=StreamingBot("microsoft/DialoGPT-small", max_length=48, timeout_s=10.0),
    inputs=[
        Tensor(name="new_inputs", dtype=bytes, shape=(1,)),
        Tensor(name="chat_history", optional=True, dtype=bytes, shape=(1,)),
    ],
    outputs=[Tensor(name="response", dtype=bytes, shape=(1,))],
    config=ModelConfig(decoupled=True),
    strict=True,
)
triton.bind(
    model_name="ResNet",
    infer_func=_classify_image,
    inputs=[Tensor(name="image", dtype=np.uint8, shape=(-1,))],
    outputs=[Tensor(name="label", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=32, batcher=DynamicBatcher(max_queue_delay_microseconds=5000)),
    strict=True,
)
triton.bind(
    model_name="BART",
    infer_func=_classify_text,
    inputs=[Tensor(name="sequence", dtype=bytes, shape=(-1,))],
    outputs=[Tensor(name="label", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
    strict=True,
)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    with triton:
        triton.serve()
