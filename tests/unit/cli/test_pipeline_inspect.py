"""`repogen inspect --mermaid` draws ensemble steps and the BLS calls the build recorded."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli

ROOT = Path(__file__).resolve().parents[3]


def test_mermaid_of_the_pipeline_example(tmp_path):
    build_app(f"{ROOT / 'examples/pipeline/app.py'}:models", tmp_path / "repo")
    calls = json.loads((tmp_path / "repo/RoutedPipeline/1/model.json").read_text())["calls"]
    assert calls == ["Classify", "Embed", "KeywordClassify", "Tokenize"]
    assert (tmp_path / "repo/Pipeline/1/.keep").is_file()
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "repo"), "--mermaid"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    ids = {
        line.split('["')[1].split('"')[0].split(" ")[0]: line.split("[")[0].strip() for line in lines if '["' in line
    }
    assert f'{ids["Pipeline"]} -->|"1. in: text→text; out: ids→Tokenize_ids"| {ids["Tokenize"]}' in result.output
    assert f'{ids["Ticker"]} -.->|"BLS"| {ids["Spell"]}' in result.output
    validate = CliRunner().invoke(cli, ["validate", str(tmp_path / "repo")])
    assert validate.exit_code == 0, validate.output
