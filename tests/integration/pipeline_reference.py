"""What examples/pipeline's models must answer, computed in plain numpy from the example's tables and its token
function, never through repogen's runner or build: the expected values of the tests that serve it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

__all__ = ["reference"]


def _example():
    """examples/pipeline/app.py as a plain module: its tables and its token function, nothing of repogen's runner."""
    path = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "app.py"
    spec = importlib.util.spec_from_file_location("pipeline_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APP = _example()


def _classified(text: bytes) -> tuple[bytes, np.float32]:
    """Tokenize, embed (mean of the table's rows), classify (softmax of the weights), in plain numpy."""
    ids = [APP._token_id(word) for word in text.split()[: APP.MAX_TOKENS]]
    embedding = APP._TABLE[ids].sum(axis=0) / max(len(ids), 1) if ids else np.zeros(APP.DIM, np.float32)
    logits = embedding.astype(np.float32) @ APP._WEIGHTS
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    return APP.LABELS[probs.argmax()], np.float32(probs.max())


def _by_keyword(text: bytes) -> bytes:
    """The keyword classifier: the word whose class is furthest from neutral decides."""
    return APP.LABELS[max((APP._KEYWORDS.get(w.lower(), 1) for w in text.split()), key=lambda c: abs(c - 1))]


def reference(model: str, texts: np.ndarray) -> dict[str, np.ndarray]:
    """What ``model`` (Pipeline, RoutedPipeline or BothClassifiers) answers for a batch of ``texts``."""
    rows = [text for text in texts[:, 0]]
    if model == "BothClassifiers":
        return {
            "model": np.array([[_classified(t)[0]] for t in rows], dtype=object),
            "keyword": np.array([[_by_keyword(t)] for t in rows], dtype=object),
        }
    answers = []
    for text in rows:
        short = model == "RoutedPipeline" and len(text.split()[: APP.MAX_TOKENS]) < 3
        answers.append((_by_keyword(text), np.float32(1.0)) if short else _classified(text))
    return {
        "label": np.array([[label] for label, _ in answers], dtype=object),
        "score": np.array([[score] for _, score in answers], dtype=np.float32),
    }
