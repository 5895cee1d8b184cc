"""PyTriton's Hugging Face examples, built and served on CPU (tests/apps/pytriton_hf): the DialoGPT streaming bot,
the ResNet classifier and the BART zero-shot classifier, each with a small stand-in of its checkpoint found by the
example's own ``from_pretrained`` name, answering over HTTP and gRPC what the same checkpoint answers here.

The models need torch and transformers in the server's Python, as a ``-pyt-python-`` image with transformers
installed has them: the repository is built with ``--packages record`` (an image that installs them), and the
server runs its models from a venv of this Python (3.11: the CPU build of torch these machines keep is for 3.11;
the GPU suite serves torch on 3.12) holding numpy 1.26.4, this venv's torch and the examples' requirements.
"""

from __future__ import annotations

import io
import queue
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from repogen.server.provision.install import ensure_server_venv, venv_info
from repogen.server.running.process import TritonServer
from repogen.testing.pytest_plugin import TritonInstallation
from tests.apps.pytriton_hf.make_models import BART_MNLI, DIALOGPT, RESNET, make_all

try:  # make frameworks installs them (make test does): their absence is a broken install, not a skip
    import torch
    from PIL import Image as PIL_Image
    from transformers import (
        AutoFeatureExtractor,
        AutoModelForCausalLM,
        AutoTokenizer,
        ResNetForImageClassification,
        pipeline,
    )
except ImportError as exc:  # pragma: no cover - the failure itself
    raise ImportError(f"{exc}: PyTriton's Hugging Face examples need torch, transformers and pillow in .venv; run "
                      "`make frameworks` (`make test` does)") from exc  # fmt: skip

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "apps" / "pytriton_hf" / "app.py"
REQUIREMENTS = APP.with_name("requirements.txt")
PROMPT = "Does money buy happines?"  # the streaming example's client sends this first
# The BART example's client's four sequences, and two more.
SEQUENCES = [
    "one day I will see the world", "I would love to learn cook the Asian street food", "Carnival in Rio de Janeiro",
    "William Shakespeare was a great writer", "I like music and dancing.", "The match was won in the last minute.",
]  # fmt: skip
MAX_LENGTH = 48  # the app's StreamingBot(max_length=48)
LABELS = ["travel", "cooking", "dancing", "sport", "music", "entertainment", "festival", "movie", "literature"]


def _requirements() -> list[str]:
    lines = (line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return [f"torch=={torch.__version__.split('+')[0]}", *(line for line in lines if line)]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("checkpoints")
    make_all(directory)
    return directory


@pytest.fixture(scope="module")
def server(checkpoints: Path, triton_install: TritonInstallation, repogen_cache_dir: Path) -> Iterator[TritonServer]:
    repository = checkpoints.parent / "repo"
    done = subprocess.run(
        [sys.executable, "-m", "repogen", "build", f"{APP}:triton", "-o", str(repository), "--packages", "record"],
        cwd=checkpoints, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "queue.Queue(maxsize=0) at infer_func -> attribute 'streamer' -> attribute 'text_queue'" in done.stdout
    base = getattr(sys, "_base_executable", sys.executable)
    venv = ensure_server_venv(python=base, numpy="1.26.4", cache_dir=repogen_cache_dir, provided=_requirements())
    server = TritonServer(repository, triton_install.install, venv_info(venv), log_path=checkpoints.parent / "log")
    try:
        server.start()
        server.wait_ready(120)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def expected(checkpoints: Path) -> dict[str, object]:
    """What the same checkpoints answer in this process, with transformers' own code rather than the app's."""

    dialogpt, resnet_50, bart_mnli = (checkpoints / name for name in (DIALOGPT, RESNET, BART_MNLI))
    bot, tokenizer = AutoModelForCausalLM.from_pretrained(dialogpt), AutoTokenizer.from_pretrained(dialogpt)
    prompt = tokenizer([PROMPT + PROMPT + tokenizer.eos_token], return_tensors="pt")
    made = bot.generate(**prompt, max_length=MAX_LENGTH, pad_token_id=tokenizer.eos_token_id)
    reply = tokenizer.decode(made[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    extractor = AutoFeatureExtractor.from_pretrained(resnet_50)
    resnet = ResNetForImageClassification.from_pretrained(resnet_50)
    with torch.no_grad():
        logits = resnet(**extractor([PIL_Image.open(io.BytesIO(_jpeg()))], return_tensors="pt")).logits
    classifier = pipeline("zero-shot-classification", model=str(bart_mnli), device=-1)
    return {
        "reply": reply,
        "image": resnet.config.id2label[int(logits[0].argmax())],
        "sequences": [result["labels"][0] for result in classifier(SEQUENCES, LABELS)],
    }


def _jpeg() -> bytes:
    pixels = np.random.default_rng(0).integers(0, 256, size=(96, 128, 3), dtype=np.uint8)
    out = io.BytesIO()
    PIL_Image.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


def test_the_streaming_bot_streams_the_reply_generate_makes_over_grpc(server: TritonServer, expected) -> None:
    """The example's client's first turn: ``new_inputs`` and ``chat_history`` both the prompt, read to the end."""
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    tokens: list[str] = []
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        inputs = []
        for name in ("new_inputs", "chat_history"):
            tensor = grpcclient.InferInput(name, [1, 1], "BYTES")
            tensor.set_data_from_numpy(np.array([[PROMPT.encode()]], dtype=object))
            inputs.append(tensor)
        client.async_stream_infer("DialoGPT-small", inputs, enable_empty_final_response=True)
        while True:
            event = events.get(timeout=60)
            assert not isinstance(event, Exception), f"{event}; server log:\n{server.log_tail()}"
            response = event.get_response()
            if response.outputs:
                tokens.extend(token.decode() for token in event.as_numpy("response")[0])
            if response.parameters["triton_final_response"].bool_param:
                break
    finally:
        client.stop_stream()
        client.close()
    assert len(tokens) > 5, tokens
    assert "".join(tokens) == expected["reply"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_resnet_labels_a_jpeg_as_the_checkpoint_does(server: TritonServer, expected, protocol: str) -> None:
    (label,) = _infer(server, protocol, "ResNet", "image", np.frombuffer(_jpeg(), dtype=np.uint8)[np.newaxis])[0]
    assert label.decode() == expected["image"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bart_classifies_a_batch_of_sequences_as_the_pipeline_does(
    server: TritonServer, expected, protocol: str
) -> None:
    """As the example's client does (``infer_batch`` of its sequences, one row each), and one sequence alone."""
    batch = np.array([[sequence.encode()] for sequence in SEQUENCES], dtype=object)
    labels = [label.decode() for label in _infer(server, protocol, "BART", "sequence", batch)[:, 0]]
    assert len(set(labels)) > 1 and labels == expected["sequences"]
    (alone,) = _infer(server, protocol, "BART", "sequence", batch[-1:])[0]
    assert alone.decode() == expected["sequences"][-1]


def _infer(server: TritonServer, protocol: str, model: str, name: str, value: np.ndarray) -> np.ndarray:
    """``label`` for one request of ``value``'s rows (``infer_batch``; one row is the examples' ``infer_sample``)."""
    module = httpclient if protocol == "http" else grpcclient
    url = server.http_url if protocol == "http" else server.grpc_url
    with module.InferenceServerClient(url) as client:
        tensor = module.InferInput(name, list(value.shape), "BYTES" if value.dtype == object else "UINT8")
        tensor.set_data_from_numpy(value)
        result = client.infer(model, [tensor])
    return result.as_numpy("label")
