"""PyTriton's ``online_learning_mnist`` as docs/pytriton.md says to fix it (tests/apps/online_learning): one model
whose instance starts its training thread in the server. Batches with targets sent over HTTP train it while
batches without are answered over gRPC by the weights it swaps in, until it classifies held-out images it never
trained on; and the server stops cleanly, the model's ``finalize`` ending the thread (a thread left waiting
would keep the instance's process alive)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

pytestmark = pytest.mark.integration

ROWS = 32


def _images(rng: np.random.Generator, prototypes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy images of random classes, and their classes: MNIST's shapes, separable like its digits."""
    labels = rng.integers(0, len(prototypes), size=n)
    images = prototypes[labels] + rng.normal(0.0, 0.3, size=(n, 28, 28))
    return images[:, np.newaxis].astype(np.float32), labels[:, np.newaxis].astype(np.int64)


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("online-learning") / "repo"
    cli_build("tests/apps/online_learning/app.py:models", repository)
    return serve(repository)


def test_it_learns_from_what_clients_send_and_serves_the_weights_it_trained(server) -> None:
    rng = np.random.default_rng(0)
    prototypes = rng.uniform(0.0, 1.0, size=(10, 28, 28))
    held_out, truth = _images(rng, prototypes, 64)
    with (
        httpclient.InferenceServerClient(server.http_url) as train,
        grpcclient.InferenceServerClient(server.grpc_url) as infer,
    ):
        before = _accuracy(infer, held_out, truth)
        losses = []
        for _ in range(12):
            images, labels = _images(rng, prototypes, ROWS)
            losses.append(_train(train, images, labels))
        deadline = time.monotonic() + 30
        accuracy = _accuracy(infer, held_out, truth)
        while accuracy < 0.9 and time.monotonic() < deadline:  # the thread trains behind the requests
            time.sleep(0.2)
            accuracy = _accuracy(infer, held_out, truth)
        final_loss = _train(train, *_images(rng, prototypes, ROWS))
    assert before <= 0.3, before  # zero weights: every image gets class 0
    assert accuracy >= 0.9, (accuracy, losses)
    # untrained weights lose ln(10) = 2.30 on every batch; trained ones far less
    assert 0.0 < final_loss < np.log(10) / 2, (losses, final_loss)


def test_the_server_stops_cleanly_the_model_ending_its_thread(server) -> None:
    started = time.monotonic()
    server.stop()
    took = time.monotonic() - started
    log = server.log_text()
    assert "successfully unloaded 'MnistOnline'" in log, log[-3000:]
    assert "still running after the model's finalize" not in log  # the runtime's word for a thread left running
    assert took < 20, f"stopping took {took:.1f} s:\n{log[-3000:]}"


def _train(client: httpclient.InferenceServerClient, images: np.ndarray, labels: np.ndarray) -> float:
    image = httpclient.InferInput("image", list(images.shape), "FP32")
    image.set_data_from_numpy(images)
    target = httpclient.InferInput("target", list(labels.shape), "INT64")
    target.set_data_from_numpy(labels)
    return float(client.infer("MnistOnline", [image, target]).as_numpy("last_loss")[0, 0])


def _accuracy(client: grpcclient.InferenceServerClient, images: np.ndarray, labels: np.ndarray) -> float:
    image = grpcclient.InferInput("image", list(images.shape), "FP32")
    image.set_data_from_numpy(images)
    predictions = client.infer("MnistOnline", [image]).as_numpy("predictions")
    return float((predictions.argmax(axis=1) == labels[:, 0]).mean())
