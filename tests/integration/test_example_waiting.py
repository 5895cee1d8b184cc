"""examples/waiting, served: the models the docs show (docs/models.md, docs/pipelines.md), over HTTP and gRPC."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.server_under_test import release_at_least

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("waiting") / "repo"
    cli_build("examples/waiting/app.py:models", repository)
    return serve(repository)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_enrich_looks_every_word_up_at_once_with_its_client_s_parameters(server, protocol):
    words = np.array([b"the", b"quick", b"brown", b"fox", b"jumps", b"over", b"a", b"dog"], dtype=object)
    parameters = {"boost": 2} if release_at_least("23.12") else None  # BLS parameters: 2.41 and later
    began = time.perf_counter()
    scores = infer(protocol, server, "Enrich", {"words": words}, parameters=parameters)["scores"]
    took = time.perf_counter() - began
    assert scores.tolist() == [len(w) * (2 if parameters else 1) for w in words]
    if release_at_least("24.06"):  # 8 lookups of 50 ms each, at once
        assert took < 0.35, took


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_four_carts_at_once_each_get_their_shopper_s_running_total(server, protocol):
    prices = [np.array([1, 2, 3, 4], np.float32) * (i + 1) for i in range(4)]
    start = threading.Barrier(4)

    def shop(i: int) -> list[float]:
        start.wait()
        shopper = np.array([100 + i], np.uint64)
        return infer(protocol, server, "Cart", {"prices": prices[i], "shopper": shopper})["totals"].tolist()

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(shop, range(4))) == [np.cumsum(p).tolist() for p in prices]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_computes_the_histogram_only_when_asked(server, protocol):
    word = {"word": np.array([b"Banana"], dtype=object)}
    assert infer(protocol, server, "Describe", word, outputs=["length"]) == {"length": np.array([6], np.int32)}
    histogram = infer(protocol, server, "Describe", word)["histogram"]
    assert histogram[:2].tolist() == [3, 1] and int(histogram[13]) == 2  # a, b, n
