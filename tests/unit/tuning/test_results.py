"""Model Analyzer's ranking read back, and the top config turned into ModelConfig arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format

from repogen.errors import TuneError
from repogen.triton.proto import model_config_pb2 as mc
from repogen.tuning.results import config_arguments, describe, read_recommendation

HEADER = (
    "Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,"
    "Throughput (infer/sec),p99 Latency (ms)\n"
)
ROWS = """AddSub,1,2,AddSub_config_2,2:CPU,1,Yes,3346.8,1.1
AddSub,1,1,AddSub_config_2,2:CPU,1,Yes,1986.2,0.7
AddSub,1,2,AddSub_config_0,1:CPU,1,Yes,3317.6,0.9
AddSub,1,2,AddSub_config_default,1:CPU,64,Yes,2863.7,1.0
AddSub,1,1,AddSub_config_default,1:CPU,64,Yes,1655.2,0.8
"""
TODAY = """name: "AddSub"
max_batch_size: 64
instance_group { name: "AddSub_0" count: 1 kind: KIND_CPU }
dynamic_batching { max_queue_delay_microseconds: 100 }
backend: "python"
"""
BEST = """name: "AddSub"
max_batch_size: 1
instance_group { count: 2 kind: KIND_CPU }
dynamic_batching { max_queue_delay_microseconds: 100 }
backend: "python"
"""


def _write(tmp_path: Path, rows: str = ROWS) -> tuple[Path, Path, Path]:
    reports, variants, repo = tmp_path / "reports", tmp_path / "variants", tmp_path / "repo"
    (reports / "results").mkdir(parents=True)
    (reports / "results" / "metrics-model-inference.csv").write_text(HEADER + rows)
    for directory, text in ((variants / "AddSub_config_2", BEST), (repo / "AddSub", TODAY)):
        directory.mkdir(parents=True)
        (directory / "config.pbtxt").write_text(text)
    return reports, variants, repo


def test_the_first_ranked_config_is_recommended_at_its_best_concurrency(tmp_path):
    found = read_recommendation(*_write(tmp_path), "AddSub")
    assert (found.best.config, found.best.concurrency, found.best.throughput) == ("AddSub_config_2", 2, 3346.8)
    assert (found.today.config, found.today.throughput, found.today.p99_ms) == ("AddSub_config_default", 2863.7, 1.0)
    assert found.measured == ("AddSub_config_2", "AddSub_config_0", "AddSub_config_default")
    assert found.arguments == {"max_batch_size": "1", "instance_groups": '[InstanceGroup(count=2, kind="KIND_CPU")]'}
    assert round(found.gain, 3) == 0.169
    assert describe(found)[-1] == (
        '    config=ModelConfig(..., max_batch_size=1, instance_groups=[InstanceGroup(count=2, kind="KIND_CPU")])'
    )


def test_today_ranked_first_means_keep_it(tmp_path):
    rows = "AddSub,1,1,AddSub_config_default,1:CPU,64,Yes,2000,1.0\nAddSub,1,1,AddSub_config_0,1:CPU,1,Yes,1000,1.0\n"
    found = read_recommendation(*_write(tmp_path, rows), "AddSub")
    assert found.arguments == {} and describe(found)[-1] == "  Keep today's config: none measured did better."


def test_batcher_arguments():
    today = text_format.Parse(TODAY, mc.ModelConfig())
    off = text_format.Parse("max_batch_size: 64 instance_group { count: 1 kind: KIND_CPU }", mc.ModelConfig())
    assert config_arguments(today, off) == {"batcher": "None"}
    tuned = text_format.Parse(
        TODAY.replace("max_queue_delay_microseconds: 100", "max_queue_delay_microseconds: 500 preferred_batch_size: 4"),
        mc.ModelConfig(),
    )
    assert config_arguments(today, tuned) == {
        "batcher": "DynamicBatcher(max_queue_delay_microseconds=500, preferred_batch_size=[4])"
    }


def test_nothing_measured_names_the_file(tmp_path):
    with pytest.raises(TuneError, match="wrote no results/metrics-model-inference.csv"):
        read_recommendation(tmp_path, tmp_path, tmp_path, "AddSub")
    reports, variants, repo = _write(tmp_path, "Other,1,1,Other_config_default,1:CPU,1,Yes,1,1\n")
    with pytest.raises(TuneError, match="measured no config of 'AddSub'"):
        read_recommendation(reports, variants, repo, "AddSub")
