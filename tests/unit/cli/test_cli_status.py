"""``repogen status`` names a READY model whose metadata it could not read, instead of skipping it as if it answered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from repogen.cli import cli
from repogen.deploy import probe
from repogen.errors import InferError
from repogen.server.client import status


class _Client:
    """Two READY models; reading the metadata of 'Broken' fails as a server's refusal would."""

    url = "127.0.0.1:8000"

    headers: dict[str, str] = {}

    def __init__(self, protocol: str, url: str | None = None, token: str | None = None) -> None:
        self.client = self

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def check_live(self) -> None:
        return None

    def is_server_ready(self) -> bool:
        return True

    def index(self) -> list[dict[str, str]]:
        return [{"name": name, "version": "1", "state": "READY", "reason": ""} for name in ("Broken", "Fine")]

    def server_version(self) -> str:
        return "2.51.0"

    def statistics(self) -> list[dict[str, Any]]:
        return []

    def metadata(self, name: str) -> dict[str, Any]:
        if name == "Broken":
            raise InferError("model 'Broken' is not available at 127.0.0.1:8000 (Request for unknown model)")
        return {"config": {"max_batch_size": 0, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1]}]}}


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    probed: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(status, "ModelClient", _Client)
    monkeypatch.setattr(status, "fetch_metrics", lambda url: None)
    monkeypatch.setattr(probe, "check", lambda url, probes, headers=None: probed.append(probes) or [])
    return probed


def test_a_model_whose_metadata_fails_is_reported_not_skipped(fake_server: list[list[dict[str, Any]]]) -> None:
    result = CliRunner().invoke(cli, ["status"], prog_name="repogen")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    broken = lines.index(next(line for line in lines if line.strip().startswith("Broken")))
    assert lines[broken + 1] == (
        "    not probed: its metadata could not be read: InferError: model 'Broken' is not available at "
        "127.0.0.1:8000 (Request for unknown model)"
    )
    assert lines[-1] == (
        "1 READY model(s) could not be probed: Broken (their metadata or config could not be read; see above)"
    )
    assert [p["model"] for p in fake_server[0]] == ["Fine"]  # the one whose config was read is still probed


def test_json_carries_the_reason(fake_server: list[list[dict[str, Any]]]) -> None:
    result = CliRunner().invoke(cli, ["status", "--json"], prog_name="repogen")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["Broken"]["unprobed"].startswith("its metadata could not be read: InferError: model 'Broken'")
    assert rows["Fine"]["unprobed"] == "" and rows["Fine"]["answers"] is True
