"""``repogen inspect``: text, deterministic JSON and the Mermaid graph of ensembles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from repogen.cli import cli

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "tests" / "golden" / "quickstart" / "expected"  # a generated repository, checked in

COMPOSING = """name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "x" data_type: TYPE_FP32 dims: [ 4 ] }}
output {{ name: "y" data_type: TYPE_FP32 dims: [ 4 ] }}
instance_group {{ count: 2 kind: KIND_CPU }}
"""

ENSEMBLE = """name: "Pipeline"
platform: "ensemble"
input { name: "raw" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "result" data_type: TYPE_FP32 dims: [ 4 ] }
ensemble_scheduling {
  step { model_name: "Pre" model_version: -1
         input_map { key: "x" value: "raw" } output_map { key: "y" value: "mid" } }
  step { model_name: "Post" model_version: 1
         input_map { key: "x" value: "mid" } output_map { key: "y" value: "result" } }
}
"""


def ensemble_repo(root: Path) -> Path:
    for name in ("Pre", "Post"):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(COMPOSING.format(name=name))
        (root / name / "1" / "model.py").write_text("")
    (root / "Pipeline" / "1").mkdir(parents=True)
    (root / "Pipeline" / "config.pbtxt").write_text(ENSEMBLE)
    return root


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["inspect", *args])
    return result.exit_code, result.output


def test_text_summary_of_quickstart() -> None:
    code, out = invoke(str(QUICKSTART))
    assert code == 0
    assert "AddSub  (backend python; versions: 1)" in out
    assert "  max_batch_size: 64; batching: dynamic (max_queue_delay_microseconds: 100)" in out
    assert "    a: FP32 [batch≤64, -1]" in out
    assert "    loud: STRING [batch≤16, 1]" in out
    assert "    length: INT64 [batch≤16, 1]" in out
    assert "  instances: 1 x KIND_CPU" in out


def test_json_of_quickstart(tmp_path: Path) -> None:
    code, out = invoke(str(QUICKSTART), "--json")
    assert code == 0
    data = json.loads(out)
    assert [m["name"] for m in data["models"]] == ["AddSub", "Shout"]
    add_sub = data["models"][0]
    assert add_sub["backend"] == "python"
    assert add_sub["platform"] == ""
    assert add_sub["versions"] == [1]
    assert add_sub["max_batch_size"] == 64
    assert add_sub["batching"] == {"kind": "dynamic", "max_queue_delay_microseconds": 100}
    assert add_sub["inputs"] == [
        {"name": "a", "data_type": "TYPE_FP32", "dims": [-1]},
        {"name": "b", "data_type": "TYPE_FP32", "dims": [-1]},
    ]
    assert [o["name"] for o in add_sub["outputs"]] == ["add", "sub"]
    assert [(g["count"], g["kind"]) for g in add_sub["instance_groups"]] == [(1, "KIND_CPU")]
    assert add_sub["decoupled"] is False
    shout = data["models"][1]
    assert [(o["name"], o["data_type"]) for o in shout["outputs"]] == [
        ("loud", "TYPE_STRING"),
        ("length", "TYPE_INT64"),
    ]
    # Deterministic: sorted keys, byte-identical for a copy elsewhere.
    assert out == json.dumps(data, indent=2, sort_keys=True) + "\n"
    shutil.copytree(QUICKSTART, tmp_path / "copy")
    assert invoke(str(tmp_path / "copy"), "--json")[1] == out


def test_json_of_ensemble(tmp_path: Path) -> None:
    data = json.loads(invoke(str(ensemble_repo(tmp_path)), "--json")[1])
    pipeline = next(m for m in data["models"] if m["name"] == "Pipeline")
    assert pipeline["platform"] == "ensemble"
    assert pipeline["batching"] == {"kind": "ensemble"}
    assert pipeline["instance_groups"] == []
    assert pipeline["steps"] == [
        {"model_name": "Pre", "model_version": -1, "input_map": {"x": "raw"}, "output_map": {"y": "mid"}},
        {"model_name": "Post", "model_version": 1, "input_map": {"x": "mid"}, "output_map": {"y": "result"}},
    ]


def test_mermaid_of_hand_written_ensemble(tmp_path: Path) -> None:
    code, out = invoke(str(ensemble_repo(tmp_path)), "--mermaid")
    assert code == 0
    assert out == (
        "flowchart LR\n"
        '  m0[["Pipeline (ensemble)"]]\n'
        '  m1["Post"]\n'
        '  m2["Pre"]\n'
        '  m0 -->|"1. in: raw→x; out: y→mid"| m2\n'
        '  m0 -->|"2. in: mid→x; out: y→result"| m1\n'
    )


def test_mermaid_draws_bls_calls_from_model_json(tmp_path: Path) -> None:
    """The hook for BLS edges: model.json's ``calls`` (not written by the emitter yet)."""
    ensemble_repo(tmp_path)
    (tmp_path / "Pre" / "1" / "model.json").write_text(json.dumps({"calls": ["Post"]}))
    out = invoke(str(tmp_path), "--mermaid")[1]
    assert '  m2 -.->|"BLS"| m1\n' in out
    assert json.loads(invoke(str(tmp_path), "--json")[1])["models"][2]["bls_calls"] == ["Post"]


def test_text_of_ensemble_and_broken_model(tmp_path: Path) -> None:
    ensemble_repo(tmp_path)
    (tmp_path / "Post" / "config.pbtxt").write_text("model_metrix { }\n")
    code, out = invoke(str(tmp_path))
    assert code == 0
    assert "Pipeline  (platform ensemble; versions: 1)" in out
    assert "  step 1: Pre in: raw→x; out: y→mid" in out
    assert "  instances: 2 x KIND_CPU" in out
    assert 'Post  (versions: 1)\n  cannot read: Message type "inference.ModelConfig" has no field named' in out


def test_json_and_mermaid_are_exclusive() -> None:
    code, out = invoke(str(QUICKSTART), "--json", "--mermaid")
    assert code == 2
    assert "choose one of --json, --mermaid and --sbom" in out


def test_the_containers_a_build_serves_head_the_text(tmp_path: Path) -> None:
    from repogen.build import build_app

    app = str(Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "app.py") + ":models"
    build_app(app, tmp_path / "all")
    assert invoke(str(tmp_path / "all"))[1].startswith(
        "Serves NGC 23.10-24.10 (Python 3.10), NGC 24.11+ (Python 3.12)\n"
    )
    build_app(app, tmp_path / "one", triton_release="24.11")
    assert invoke(str(tmp_path / "one"))[1].startswith("Serves tritonserver 2.52.0 (NGC 24.11) only, Python 3.12\n")
    assert json.loads(invoke(str(tmp_path / "one"), "--json")[1])["serves"].startswith("tritonserver 2.52.0")
