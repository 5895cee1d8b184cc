"""The compiled Triton ModelConfig schema: freshness, text-format round trips, documented syntax."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from google.protobuf.descriptor import Descriptor

from repogen.triton import fields as releases
from repogen.triton.proto import generate
from repogen.triton.proto import model_config_pb2 as mc

# --------------------------------------------------------------------------- (a) freshness


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    written = generate.generate(out_dir=tmp_path)
    assert [p.name for p in written] == list(generate.GENERATED_FILES)
    for name in generate.GENERATED_FILES:
        committed = generate.PACKAGE_DIR / name
        assert committed.is_file(), f"{committed} is missing: run `make proto`"
        assert committed.read_bytes() == (tmp_path / name).read_bytes(), (
            f"repogen/triton/proto/{name} is stale relative to proto/model_config.proto: run `make proto`"
        )


def test_generate_cli_writes_files(tmp_path: Path) -> None:
    assert generate.main(["--out", str(tmp_path / "out")]) == 0
    for name in generate.GENERATED_FILES:
        assert (tmp_path / "out" / name).is_file()


def test_generate_cli_reports_missing_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate.main(["--out", str(tmp_path), "--proto-dir", str(tmp_path / "nowhere")]) == 1
    assert "schema not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- schema vs releases


def _all_field_names() -> set[str]:
    names: set[str] = set()

    def visit(desc: Descriptor) -> None:
        for field in desc.fields:
            names.add(releases.triton_name(field.full_name))
        for nested in desc.nested_types:
            visit(nested)

    for message in mc.DESCRIPTOR.message_types_by_name.values():
        visit(message)
    return names


def test_schema_is_the_newest_read_and_every_field_added_since_23_10_has_its_release() -> None:
    fields = _all_field_names()
    assert mc.DESCRIPTOR.package == "repogen.inference"
    assert mc.DESCRIPTOR.name == "proto/model_config.proto"
    for name in releases.FIELDS_ADDED:
        assert name in fields, name
    assert "ModelMetrics" in mc.DESCRIPTOR.message_types_by_name
    assert mc.ModelConfig.DESCRIPTOR.fields_by_name["response_cache"].number == 24
    assert mc.ModelConfig.DESCRIPTOR.fields_by_name["runtime"].number == 25
    assert mc.ModelConfig.DESCRIPTOR.fields_by_name["model_metrics"].number == 26
    assert mc.ModelEnsembling.DESCRIPTOR.fields_by_name["max_inflight_requests"].number == 2
    assert mc.TYPE_BF16 == 14


def test_release_helpers() -> None:
    assert releases.introduced_in("inference.ModelConfig.runtime") == "24.01"
    assert releases.introduced_in("inference.ModelConfig.name") is None
    assert releases.supported_by("inference.ModelInput.is_non_linear_format_io", "24.10")
    assert not releases.supported_by("inference.ModelInput.is_non_linear_format_io", "24.07")
    assert not releases.supported_by("inference.ModelConfig.model_metrics", "24.10")
    assert releases.supported_by("inference.ModelConfig.model_metrics", "24.11")
    assert releases.supported_by("inference.ModelInput.optional", "23.10")


# --------------------------------------------------------------------------- (b) round trips


def _roundtrip(config: mc.ModelConfig) -> mc.ModelConfig:
    text = text_format.MessageToString(config)
    parsed = text_format.Parse(text, mc.ModelConfig())
    assert parsed == config, text
    assert text_format.MessageToString(parsed) == text
    return parsed


def test_roundtrip_python_model_with_dynamic_batching() -> None:
    config = mc.ModelConfig(name="AddSub", backend="python", max_batch_size=64)
    config.input.add(name="a", data_type=mc.TYPE_FP32, dims=[-1])
    config.input.add(name="text", data_type=mc.TYPE_STRING, dims=[1], optional=True)
    config.output.add(name="add", data_type=mc.TYPE_FP32, dims=[-1])
    config.output.add(name="label", data_type=mc.TYPE_STRING, dims=[-1])
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_CPU, count=2)
    config.dynamic_batching.max_queue_delay_microseconds = 100
    config.dynamic_batching.preferred_batch_size.extend([16, 32])
    policy = config.dynamic_batching.default_queue_policy
    policy.timeout_action = mc.ModelQueuePolicy.DELAY
    policy.default_timeout_microseconds = 5000
    policy.allow_timeout_override = True
    policy.max_queue_size = 128
    config.parameters["EXECUTION_ENV_PATH"].string_value = "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
    config.parameters["shm-default-byte-size"].string_value = "1048576"
    warmup = config.model_warmup.add(name="warm", batch_size=2, count=1)
    warmup.inputs["a"].data_type = mc.TYPE_FP32
    warmup.inputs["a"].dims.append(4)
    warmup.inputs["a"].random_data = True
    warmup.inputs["text"].data_type = mc.TYPE_STRING
    warmup.inputs["text"].dims.append(1)
    warmup.inputs["text"].zero_data = True
    config.model_transaction_policy.decoupled = True
    config.response_cache.enable = True

    parsed = _roundtrip(config)
    assert parsed.WhichOneof("scheduling_choice") == "dynamic_batching"
    assert parsed.input[1].data_type == mc.TYPE_STRING
    assert parsed.parameters["shm-default-byte-size"].string_value == "1048576"
    assert parsed.model_warmup[0].inputs["a"].WhichOneof("input_data_type") == "random_data"


def test_roundtrip_sequence_batching() -> None:
    config = mc.ModelConfig(name="Seq", backend="python", max_batch_size=8)
    seq = config.sequence_batching
    seq.max_sequence_idle_microseconds = 5_000_000
    seq.oldest.max_candidate_sequences = 4
    seq.oldest.preferred_batch_size.append(4)
    start = seq.control_input.add(name="START")
    start.control.add(kind=mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START, int32_false_true=[0, 1])
    corrid = seq.control_input.add(name="CORRID")
    corrid.control.add(kind=mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID, data_type=mc.TYPE_UINT64)
    state = seq.state.add(input_name="IN_STATE", output_name="OUT_STATE", data_type=mc.TYPE_FP32, dims=[-1])
    state.initial_state.add(name="init", data_type=mc.TYPE_FP32, dims=[1], zero_data=True)
    seq.iterative_sequence = True

    parsed = _roundtrip(config)
    assert parsed.WhichOneof("scheduling_choice") == "sequence_batching"
    assert parsed.sequence_batching.WhichOneof("strategy_choice") == "oldest"
    assert list(parsed.sequence_batching.control_input[0].control[0].int32_false_true) == [0, 1]


def test_roundtrip_ensemble() -> None:
    config = mc.ModelConfig(name="Pipeline", platform="ensemble", max_batch_size=16)
    config.input.add(name="RAW", data_type=mc.TYPE_STRING, dims=[1])
    config.output.add(name="SCORES", data_type=mc.TYPE_FP32, dims=[10])
    pre = config.ensemble_scheduling.step.add(model_name="preprocess", model_version=-1)
    pre.input_map["INPUT"] = "RAW"
    pre.output_map["OUTPUT"] = "pixels"
    cls = config.ensemble_scheduling.step.add(model_name="classifier", model_version=-1)
    cls.input_map["x"] = "pixels"
    cls.output_map["y"] = "SCORES"

    parsed = _roundtrip(config)
    assert parsed.WhichOneof("scheduling_choice") == "ensemble_scheduling"
    assert [s.model_name for s in parsed.ensemble_scheduling.step] == ["preprocess", "classifier"]
    assert dict(parsed.ensemble_scheduling.step[1].input_map) == {"x": "pixels"}


def test_scheduling_choice_is_a_oneof() -> None:
    config = mc.ModelConfig()
    config.dynamic_batching.max_queue_delay_microseconds = 1
    config.sequence_batching.max_sequence_idle_microseconds = 1
    assert config.WhichOneof("scheduling_choice") == "sequence_batching"
    assert not config.HasField("dynamic_batching")


# --------------------------------------------------------------------------- (c) documented syntax

DOCUMENTED_STYLE = """
name: "resnet"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "input0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ -1, 3 ]
    reshape: { shape: [ 1, -1, 3 ] }
  }
]
output [
  {
    name: "output0"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    label_filename: "labels.txt"
  }
]
instance_group [ { kind: KIND_GPU count: 2 gpus: [0, 1] } ]
dynamic_batching { }
response_cache { enable: true }
model_transaction_policy { decoupled: true }
parameters: { key: "precision" value: { string_value: "fp16" } }
optimization { execution_accelerators {
  gpu_execution_accelerator : [ {
    name : "tensorrt"
    parameters { key: "precision_mode" value: "FP16" }
    parameters { key: "max_workspace_size_bytes" value: "1073741824" }
  } ]
} }
"""


def test_parse_documented_style() -> None:
    config = text_format.Parse(DOCUMENTED_STYLE, mc.ModelConfig())
    assert config.name == "resnet"
    assert config.max_batch_size == 8
    assert config.version_policy.WhichOneof("policy_choice") == "specific"
    assert list(config.version_policy.specific.versions) == [1, 3]
    assert list(config.input[0].dims) == [-1, 3]
    assert config.input[0].format == mc.ModelInput.FORMAT_NCHW
    assert list(config.input[0].reshape.shape) == [1, -1, 3]
    assert config.output[0].label_filename == "labels.txt"
    (group,) = config.instance_group
    assert group.kind == mc.ModelInstanceGroup.KIND_GPU
    assert group.count == 2
    assert list(group.gpus) == [0, 1]
    assert config.HasField("dynamic_batching")
    assert config.response_cache.enable
    assert config.model_transaction_policy.decoupled
    assert config.parameters["precision"].string_value == "fp16"
    (accel,) = config.optimization.execution_accelerators.gpu_execution_accelerator
    assert accel.name == "tensorrt"
    assert dict(accel.parameters) == {"precision_mode": "FP16", "max_workspace_size_bytes": "1073741824"}


def test_parse_warmup_and_rate_limiter() -> None:
    text = """
    name: "m"
    backend: "python"
    instance_group [
      {
        count: 1
        kind: KIND_CPU
        rate_limiter { resources [ { name: "R1" count: 4 } ] priority: 2 }
      }
    ]
    model_warmup [
      {
        name: "sample"
        batch_size: 1
        inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } }
      }
    ]
    """
    config = text_format.Parse(text, mc.ModelConfig())
    limiter = config.instance_group[0].rate_limiter
    assert (limiter.resources[0].name, limiter.resources[0].count, limiter.priority) == ("R1", 4, 2)
    sample = config.model_warmup[0].inputs["INPUT0"]
    assert list(sample.dims) == [16]
    assert sample.WhichOneof("input_data_type") == "zero_data"


@pytest.mark.parametrize(
    "snippet",
    [
        'model_metrics { metric_control { metric_identifier { family: "nv_inference_first_response_histogram_ms" } '
        "histogram_options { buckets: [1, 10] } } }",
        "ensemble_scheduling { max_inflight_requests: 4 }",
    ],
)
def test_fields_added_after_24_10_round_trip(snippet: str) -> None:
    _roundtrip(text_format.Parse(snippet, mc.ModelConfig()))
