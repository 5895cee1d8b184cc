"""Text → tokenize → embed → classify, twice: as a Triton ensemble and as a BLS model with a branch.

    repogen build examples/pipeline/app.py:models -o build/pipeline

``Pipeline`` is an ensemble: Triton runs the three steps, no Python glue in between.
``RoutedPipeline`` is a BLS model: Python code calls the same models, and picks the classifier
by a value computed at run time (short texts go to a keyword classifier).
``Ticker``/``Spell`` show streaming through BLS, ``BothClassifiers`` two concurrent async calls.
"""

import asyncio
import zlib

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()

MAX_TOKENS = 8
DIM = 4
LABELS = np.array([b"negative", b"neutral", b"positive"], dtype=object)
_TABLE = np.random.default_rng(7).standard_normal((1024, DIM)).astype(np.float32)
_WEIGHTS = np.random.default_rng(11).standard_normal((DIM, len(LABELS))).astype(np.float32)
_KEYWORDS = {b"good": 2, b"great": 2, b"bad": 0, b"awful": 0}


def _token_id(word: bytes) -> int:
    return 1 + zlib.crc32(word.lower()) % 1023  # 0 is padding


@models.model(
    "Tokenize",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="ids", dtype=np.int64, shape=(MAX_TOKENS,)), Tensor(name="count", dtype=np.int32, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def tokenize(text):
    ids = np.zeros((len(text), MAX_TOKENS), dtype=np.int64)
    count = np.zeros((len(text), 1), dtype=np.int32)
    for row, value in enumerate(text[:, 0]):
        words = value.split()[:MAX_TOKENS]
        ids[row, : len(words)] = [_token_id(w) for w in words]
        count[row, 0] = len(words)
    return {"ids": ids, "count": count}


@models.model(
    "Embed",
    inputs=[Tensor(name="ids", dtype=np.int64, shape=(MAX_TOKENS,))],
    outputs=[Tensor(name="embedding", dtype=np.float32, shape=(DIM,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def embed(ids):
    mask = (ids > 0)[..., None]
    summed = (_TABLE[ids] * mask).sum(axis=1)
    return {"embedding": (summed / np.maximum(mask.sum(axis=1), 1)).astype(np.float32)}


_CLASS_OUTPUTS = [Tensor(name="label", dtype=bytes, shape=(1,)), Tensor(name="score", dtype=np.float32, shape=(1,))]


@models.model(
    "Classify",
    inputs=[Tensor(name="embedding", dtype=np.float32, shape=(DIM,))],
    outputs=_CLASS_OUTPUTS,
    config=ModelConfig(max_batch_size=8),
)
@batch
def classify(embedding):
    logits = embedding @ _WEIGHTS
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    best = probs.argmax(axis=1)
    return {"label": LABELS[best][:, None], "score": probs.max(axis=1, keepdims=True).astype(np.float32)}


@models.model(
    "KeywordClassify",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=_CLASS_OUTPUTS,
    config=ModelConfig(max_batch_size=8),
)
@batch
def keyword_classify(text):
    best = [max((_KEYWORDS.get(w.lower(), 1) for w in t.split()), key=lambda c: abs(c - 1)) for t in text[:, 0]]
    return {"label": LABELS[best][:, None], "score": np.ones((len(text), 1), dtype=np.float32)}


@models.ensemble(
    "Pipeline",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=_CLASS_OUTPUTS,
    config=ModelConfig(max_batch_size=8),
)
def pipeline(text):
    ids = tokenize(text=text)["ids"]
    embedding = embed(ids=ids)["embedding"]
    result = classify(embedding=embedding)
    return {"label": result["label"], "score": result["score"]}


@models.model(
    "RoutedPipeline",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=_CLASS_OUTPUTS,
    config=ModelConfig(max_batch_size=8),
)
@batch
def routed_pipeline(text):
    tokens = tokenize(text=text)
    labels, scores = [], []
    for row in range(len(text)):
        if tokens["count"][row, 0] < 3:  # a branch on data: only BLS can do this
            result = keyword_classify(text=text[row : row + 1])
        else:
            embedding = embed.outputs("embedding")(ids=tokens["ids"][row : row + 1])["embedding"]
            result = classify(embedding=embedding)
        labels.append(result["label"])
        scores.append(result["score"])
    return {"label": np.concatenate(labels), "score": np.concatenate(scores)}


@models.model(
    "BothClassifiers",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="model", dtype=bytes, shape=(1,)), Tensor(name="keyword", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
async def both_classifiers(text):
    embedding = embed(ids=tokenize(text=text)["ids"])["embedding"]
    by_model, by_keyword = await asyncio.gather(
        classify.infer_async(embedding=embedding), keyword_classify.infer_async(text=text)
    )
    return {"model": by_model["label"], "keyword": by_keyword["label"]}


@models.model(
    "Spell",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="word", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False),
)
def spell(requests):
    """Streams one response per word (a decoupled model: a generator)."""
    for word in requests[0]["text"][0].split():
        yield [{"word": np.array([word], dtype=object)}]


@models.model(
    "Ticker",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="word", dtype=bytes, shape=(1,)), Tensor(name="seen", dtype=np.int32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def ticker(requests):
    """Re-streams Spell's words through BLS, upper-cased, with a running count."""
    for seen, chunk in enumerate(spell.stream(text=requests[0]["text"]), start=1):
        yield [{"word": np.char.upper(chunk["word"].astype(bytes)).astype(object), "seen": np.array([seen], np.int32)}]


@models.model(
    "WordCount",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="words", dtype=np.int32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def word_count(requests):
    """Aggregates a stream: counts what Spell sends."""
    return [{"words": np.array([sum(1 for _ in spell.stream(text=r["text"]))], np.int32)} for r in requests]
