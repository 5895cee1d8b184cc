"""Metrics of the callables' own on the real server (tests/apps/metrics/app.py), read from /metrics by Prometheus's
own text parser after real requests: a counter with labels, a gauge, a histogram (where the release has them: 2.49+;
on 2.39/2.41 it is inert and the model says so), each series labelled with its model and version. The families
survive an unload and a reload (the counter goes on from where it was) and a server stop, whose stubs then end
normally: every instance's ``atexit`` handler runs (a stub that crashed on freed metric families would run none)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import tritonclient.http as httpclient

from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.crashes import kernel_clock, segfaults, stubs_of
from repogen.testing.scrape import scrape
from repogen.testing.server_under_test import release_at_least
from repogen.triton.python_backend import HISTOGRAM_FROM

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

APP = "tests/apps/metrics/app.py:models"
WORDS = [b"ab", b"cde", b"f"]
STARTED: list[float] = []  # the kernel's clock when the module's server started
STUBS: dict[int, str] = {}
"""Every backend stub the module's server ran, as the tests saw them: the kernel's log must hold no segfault of one."""


@pytest.fixture(scope="module")
def served(triton_install, cli_build, tmp_path_factory):
    root = tmp_path_factory.mktemp("user_metrics")
    marks = root / "marks"
    marks.mkdir()
    STARTED.append(kernel_clock())
    cli_build(APP, root / "repo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPOGEN_TEST_FINALIZE_DIR", str(marks))  # the server's environment, its stubs' too
        server = triton_install.server(root / "repo", log_path=root / "tritonserver.log",
                                      extra_args=["--model-control-mode=explicit", "--load-model=*"])  # fmt: skip
        server.start()
    try:
        server.wait_ready(120)
        yield server, marks, STUBS
    finally:
        server.stop()


def send(server, model: str, words: list[bytes], protocol: str = "http") -> None:
    infer(protocol, server, model, {"text": np.array([[w] for w in words], dtype=object)})


def wait_for(path, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.2)
    return path.exists()


def test_the_callables_metrics_are_on_the_metrics_port(served):
    server, _, stubs = served
    stubs.update(stubs_of(server.pid))
    for protocol in PROTOCOLS:
        send(server, "Counted", WORDS, protocol)  # 3 words, 6 characters
        send(server, "Counted", WORDS[:1], protocol)  # 1 word, 2 characters
    send(server, "Other", WORDS[:2])
    metrics = scrape(server.metrics_url)
    tokens = metrics.family("app_tokens")
    assert (tokens.type, tokens.documentation) == ("counter", "Tokens the callables counted")
    assert metrics.value("app_tokens", kind="word", model="Counted", version="1") == 8
    assert metrics.value("app_tokens", kind="char", model="Counted", version="1") == 16
    assert metrics.value("app_tokens", kind="word", model="Other", version="1") == 2  # one family, its own series
    assert metrics.family("app_last_rows").type == "gauge"
    assert metrics.value("app_last_rows", model="Counted", version="1") == 1
    if release_at_least(HISTOGRAM_FROM):
        assert metrics.family("app_rows").type == "histogram"
        buckets = {float(s.labels["le"]): s.value for s in metrics.samples("app_rows_bucket")}
        assert buckets == {1: 2, 2: 2, 4: 4, float("inf"): 4}  # calls of 3, 1, 3, 1 rows
        assert (metrics.value("app_rows_count"), metrics.value("app_rows_sum")) == (4, 8)
    else:
        assert "app_rows" not in metrics.families
        log = server.log_path.read_text(errors="replace")
        assert (
            "model 'Counted': metric 'app_rows' (histogram) is not served: this tritonserver's Python backend has no "
            "histograms (python_backend r24.08, NGC 24.08, on)"
        ) in log


def test_the_families_survive_an_unload_and_a_reload(served):
    server, marks, stubs = served
    before = scrape(server.metrics_url).value("app_tokens", kind="word", model="Counted", version="1")
    assert before
    with httpclient.InferenceServerClient(server.http_url) as client:
        client.unload_model("Counted")
        assert wait_for(marks / "atexit-Counted_0_0")  # the stub ended normally: its atexit handler ran
        metrics = scrape(server.metrics_url)
        assert metrics.value("app_tokens", kind="word", model="Counted", version="1") == before
        client.load_model("Counted")
    send(server, "Counted", WORDS, "grpc")
    stubs.update(stubs_of(server.pid))
    assert scrape(server.metrics_url).value("app_tokens", kind="word", model="Counted", version="1") == before + 3
    assert "Signal (11)" not in server.log_path.read_text(errors="replace")


def test_a_server_stop_ends_every_stub_normally(served):
    server, marks, stubs = served
    stubs.update(stubs_of(server.pid))
    server.stop()
    assert (marks / "finalize-Counted_0_0").read_text() == "1\n1\n"  # the unloaded instance's and the reloaded one's
    assert (marks / "atexit-Counted_0_0").read_text() == "1\n1\n"
    assert "Signal (11)" not in server.log_path.read_text(errors="replace")
    assert len(stubs) >= 3, stubs  # Counted's two (before and after the reload) and Other's
    # a stub freeing its families crashes after its atexit handlers ran: only the kernel's log says so
    assert segfaults(stubs, since=STARTED[0]) == []
