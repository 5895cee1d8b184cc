"""examples/classifier, the README's class model: weights shipped with ``files=[...]`` load in the
server once per instance, and both instances answer as the app does in-process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from repogen.loader import load_app
from repogen.testing.answers import assert_floats_close
from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration

APP = "examples/classifier/app.py:models"
FEATURES = np.array(
    [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 2.8, 4.3, 1.3], [5.7, 2.8, 4.1, 1.3], [6.9, 3.1, 5.4, 2.1]],
    dtype=np.float32,
)


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("classifier") / "repo"
    assert "Built 1 model(s)" in cli_build(APP, out).stdout
    return out


@pytest.fixture(scope="module")
def server(serve, repo):
    return serve(repo)


def test_weights_ship_as_a_file_not_in_the_pickle(repo):
    shipped = repo / "Classifier" / "1" / "files" / "weights.json"
    assert json.loads(shipped.read_text()) == json.loads(Path("examples/classifier/weights.json").read_text())
    assert b"versicolor" not in (repo / "Classifier" / "1" / "model.pkl").read_bytes()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_served_answers_are_the_apps(server, protocol):
    expected = load_app(APP).repository.local().infer("Classifier", {"features": FEATURES})
    out = infer(protocol, server, "Classifier", {"features": FEATURES})
    assert out["label"].tolist() == [[b"setosa"], [b"virginica"], [b"versicolor"], [b"versicolor"], [b"virginica"]]
    assert out["label"].tolist() == expected["label"].tolist()
    assert_floats_close(out["scores"], expected["scores"], f"Classifier scores over {protocol}")


def test_each_instance_loads_the_weights(server):
    with server.client() as client:
        config = client.get_model_config("Classifier")
    assert [(g["count"], g["kind"]) for g in config["instance_group"]] == [(2, "KIND_CPU")]
    log = server.log_text()
    assert "Classifier_0_0" in log and "Classifier_0_1" in log
