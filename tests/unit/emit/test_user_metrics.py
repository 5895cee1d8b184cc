"""The callables' own metrics without a server (tests/integration/test_user_metrics_served.py serves them): the
declarations prometheus_client's users write, what the build records and refuses, and counting in process."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from repogen import Counter, Gauge, Histogram, ModelConfig, Repository, Tensor, batch, build_app
from repogen.build import build_repository
from repogen.errors import BuildError, ReleaseRuleWarning
from repogen.triton.releases import get_release

ROOT = Path(__file__).resolve().parents[3]
X = [Tensor(name="x", dtype=np.float32, shape=(1,))]


def test_declarations_refuse_what_prometheus_or_the_runtime_would():
    with pytest.raises(ValueError, match="metric name '1up': expected letters, digits"):
        Counter("1up", "x")
    with pytest.raises(ValueError, match="metric name 'nv_mine': names starting 'nv_' are Triton's and repogen's own"):
        Counter("nv_mine", "x")
    with pytest.raises(ValueError, match=r"metric 'm': label 'model' is set by the runtime \(the model's model\)"):
        Gauge("m", "x", ["model"])
    with pytest.raises(ValueError, match=r"histogram 'h': buckets must be increasing numbers, found \[2, 1\]"):
        Histogram("h", "x", buckets=[2, 1])
    with pytest.raises(ValueError, match="metric 'm': give it a documentation string"):
        Counter("m", "")


def test_series_count_in_process_outside_a_server():
    tokens = Counter("t_tokens", "tokens", ["kind"])
    tokens.labels(kind="word").inc(2)
    tokens.labels("word").inc()
    assert tokens.labels(kind="word").value() == 3 and tokens.labels(kind="char").value() == 0
    with pytest.raises(ValueError, match="counter 't_tokens' only goes up: inc"):
        tokens.labels(kind="word").inc(-1)
    with pytest.raises(ValueError, match=r"metric 't_tokens': expected labels \['kind'\], found \['kinds'\]"):
        tokens.labels(kinds="word")
    with pytest.raises(ValueError, match=r"metric 't_tokens' has labels \['kind'\]: update .labels\(...\) of it"):
        tokens.inc()
    level = Gauge("t_level", "level")
    level.set(5)
    level.dec(2)
    assert level.value() == 3
    rows = Histogram("t_rows", "rows", buckets=[1, 2])
    rows.observe(2)
    with rows.time():
        pass
    assert rows.labels().count == 2


def test_a_model_counts_through_models_local():
    models = Repository()
    calls = Counter("t_calls", "calls")

    @models.model("M", inputs=X, outputs=X, config=ModelConfig(max_batch_size=4))
    @batch
    def m(x):
        calls.inc(len(x))
        return {"x": x}

    models.local().infer("M", {"x": np.ones((3, 1), dtype=np.float32)})
    assert calls.value() == 3


def _app(tmp_path: Path, body: str) -> str:
    app = tmp_path / "app.py"
    app.write_text(
        "import numpy as np\nfrom repogen import Counter, Gauge, Histogram, ModelConfig, Repository, Tensor, batch\n"
        "models = Repository()\nX = [Tensor(name='x', dtype=np.float32, shape=(1,))]\n" + body
    )
    return f"{app}:models"


MODEL = """
@models.model("{name}", inputs=X, outputs=X, config=ModelConfig(max_batch_size=4))
@batch
def {name}_f(x):
    {use}
    return {{"x": x}}
"""


def test_the_build_records_each_models_metrics(tmp_path: Path):
    body = "ROWS = Histogram('app_rows', 'rows', buckets=[1, 2])\nHITS = Counter('app_hits', 'hits', ['kind'])\n"
    body += MODEL.format(name="A", use="ROWS.observe(len(x)); HITS.labels(kind='a').inc()")
    body += MODEL.format(name="B", use="HITS.labels(kind='b').inc()")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRuleWarning)
        build_app(_app(tmp_path, body), tmp_path / "repo")
    recorded = json.loads((tmp_path / "repo" / "A" / "1" / "model.json").read_text())["metrics"]
    assert recorded == [
        {"documentation": "hits", "kind": "counter", "labels": ["kind"], "name": "app_hits"},
        {"buckets": [1.0, 2.0], "documentation": "rows", "kind": "histogram", "labels": [], "name": "app_rows"},
    ]
    assert [m["name"] for m in json.loads((tmp_path / "repo" / "B" / "1" / "model.json").read_text())["metrics"]] == [
        "app_hits"
    ]


def test_one_name_declared_two_ways_fails_the_build(tmp_path: Path):
    body = "ONE = Counter('app_n', 'counted by A')\nTWO = Gauge('app_n', 'set by B')\n"
    body += MODEL.format(name="A", use="ONE.inc()") + MODEL.format(name="B", use="TWO.set(1)")
    said = r"a counter with labels \[\] \('counted by A'\) and a gauge with labels \[\] \('set by B'\)"
    with pytest.raises(BuildError, match=rf"models 'A' and 'B' declare metric 'app_n' differently: {said}"):
        build_app(_app(tmp_path, body), tmp_path / "repo")


def test_a_histogram_is_refused_for_a_release_without_them_and_warned_of_beside_others(tmp_path: Path):
    body = "ROWS = Histogram('app_rows', 'rows')\n" + MODEL.format(name="A", use="ROWS.observe(1)")
    app = _app(tmp_path, body)
    with pytest.raises(BuildError) as refused:
        build_app(app, tmp_path / "old", triton_release=get_release("23.10"))
    assert str(refused.value).endswith(
        "model 'A': histogram(s) 'app_rows': the Python backend serves histograms from tritonserver 2.49.0 (NGC 24.08) "
        "on (python_backend r24.08), and the build targets NGC 23.10 (Python 3.10). Target 24.08 or newer "
        "(--triton-release), or count with a Counter or a Gauge"
    )
    build_app(app, tmp_path / "new", triton_release=get_release("24.10"))  # serves them: nothing said
    with pytest.warns(ReleaseRuleWarning, match=r"on NGC 23.10-24.07 \(Python 3.10\) they are inert"):
        build_app(app, tmp_path / "all")


def test_a_repository_without_metrics_records_none(tmp_path: Path):
    models = Repository()
    models.bind("M", lambda requests: requests, inputs=X, outputs=X, config=ModelConfig(batching=False))
    build_repository(models, tmp_path / "repo")
    assert "metrics" not in json.loads((tmp_path / "repo" / "M" / "1" / "model.json").read_text())
