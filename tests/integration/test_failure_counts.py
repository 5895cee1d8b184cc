"""Failed requests are counted on every release: 2.39/2.41 count a Python model's error
response as a failure, 2.51 as a success (measured with a hand-written model: repogen.triton.known_issues),
so the runtime counts its error responses in ``repogen_inference_request_failure`` on Triton's metrics
endpoint, and ``repogen status`` adds it where the release does not count them itself."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from repogen.server.client.counts import fetch_metrics, repogen_failures, served_counts
from repogen.server.client.infer import ModelClient
from repogen.testing.client import infer
from repogen.triton.known_issues import error_responses_count_as_success

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

SENT = {"http": (3, 2), "grpc": (2, 1)}  # protocol → (failing, answered) requests


@pytest.fixture(scope="module")
def counted(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("failing") / "repo"
    cli_build("tests/apps/failing/app.py:models", repo)
    server = serve(repo)
    for protocol, (failing, answered) in SENT.items():
        for _ in range(failing):
            with pytest.raises(Exception, match="KeyError: 'large'"):
                infer(protocol, server, "Checked", {"x": np.array([[11.0]], dtype=np.float32)})
        for _ in range(answered):
            assert infer(protocol, server, "Checked", {"x": np.array([[1.0]], dtype=np.float32)})["y"].tolist() == [
                [2.0]
            ]
    return server


def test_the_runtime_counts_each_failed_request(counted):
    metrics = fetch_metrics(counted.metrics_url)
    assert metrics is not None
    assert repogen_failures(metrics)[("Checked", "1")] == 5
    assert (
        "# HELP repogen_inference_request_failure" in metrics
        and "# TYPE repogen_inference_request_failure counter" in metrics
    )


def test_served_and_failed_counts_on_this_release(counted):
    with ModelClient("http", counted.http_url) as client:
        version = client.server_version()
        stats = client.statistics()
    raw = next(e for e in stats if e["name"] == "Checked")["inference_stats"]
    if error_responses_count_as_success(version):  # what the stock server reports by itself
        assert (int(raw["success"]["count"]), int(raw.get("fail", {}).get("count", 0))) == (8, 0)
    else:
        assert (int(raw["success"]["count"]), int(raw["fail"]["count"])) == (3, 5)
    counts = served_counts(stats, version, fetch_metrics(counted.metrics_url))[("Checked", "1")]
    assert (counts["requests"], counts["failed"]) == (8, 5)


def test_status_prints_the_failures(counted):
    cmd = [sys.executable, "-m", "repogen", "status", "--url", counted.http_url, "--metrics-url", counted.metrics_url,
           "--no-probe"]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    row = next(line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["Checked"])
    assert row[1:5] == ["1", "READY", "8", "5"], result.stdout
