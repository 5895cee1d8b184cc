"""Every emitted config.pbtxt parses back into the compiled ModelConfig message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

from repogen import DynamicBatcher, ModelConfig, QueuePolicy, Repository, Tensor, TimeoutAction, batch
from repogen.emit.assemble import emit_repository
from repogen.emit.model_config import model_config, to_text
from repogen.emit.plan import plan_payloads
from repogen.ir import lower
from repogen.loader import load_app
from repogen.pickling import picklers as pickling
from repogen.triton.proto import model_config_pb2 as mc

ROOT = Path(__file__).resolve().parents[3]


def _roundtrip(spec) -> mc.ModelConfig:
    message = model_config(spec)
    parsed = text_format.Parse(to_text(message), mc.ModelConfig())
    assert parsed == message
    return parsed


@pytest.mark.parametrize("app", ["examples/quickstart/app.py:models", "tests/apps/features/app.py:models"])
def test_example_configs_round_trip(app):
    loaded = load_app(str(ROOT / app.split(":")[0]) + ":models")
    pickling.register_by_value(loaded.local_modules)  # as build_repository does for its roots
    spec = lower(loaded.repository)
    files = emit_repository(spec, plan_payloads(spec, roots=(str(loaded.app_dir),)))
    for model in spec.models:
        text = files[f"{model.name}/config.pbtxt"].decode()
        assert text_format.Parse(text, mc.ModelConfig()) == model_config(model)
        assert "max_batch_size: " in text  # written even when zero


def _identity(requests):
    return requests


def test_full_batcher_round_trips():
    repo = Repository()
    policy = QueuePolicy(timeout_action=TimeoutAction.DELAY, default_timeout_microseconds=5, max_queue_size=9)
    repo.bind(
        "M",
        [_identity, _identity],
        [Tensor((-1, 3), np.float16, "x", optional=True), Tensor((1,), "BYTES", "s")],
        [Tensor((2,), "int64", "y")],
        config=ModelConfig(
            max_batch_size=8,
            batcher=DynamicBatcher(
                max_queue_delay_microseconds=7,
                preferred_batch_size=[2, 4],
                preserve_ordering=True,
                priority_levels=2,
                default_priority_level=1,
                default_queue_policy=policy,
                priority_queue_policy={2: QueuePolicy(max_queue_size=3)},
            ),
            response_cache=True,
            decoupled=True,
            parameters={"EXECUTION_ENV_PATH": "$$TRITON_MODEL_DIRECTORY/env.tar.gz"},
        ),
    )
    config = _roundtrip(lower(repo).models[0])
    assert config.instance_group[0].count == 2
    assert config.input[0].optional and config.input[0].data_type == mc.TYPE_FP16
    assert list(config.input[0].dims) == [-1, 3]
    assert config.input[1].data_type == mc.TYPE_STRING
    assert config.dynamic_batching.priority_queue_policy[2].max_queue_size == 3
    assert config.dynamic_batching.default_queue_policy.timeout_action == mc.ModelQueuePolicy.DELAY
    assert config.response_cache.enable and config.model_transaction_policy.decoupled
    assert config.parameters["EXECUTION_ENV_PATH"].string_value.startswith("$$")


def test_non_batching_model_writes_zero_and_no_batcher():
    repo = Repository()
    repo.bind(
        "NB",
        _identity,
        [Tensor((1,), np.float32, "x")],
        [Tensor((1,), np.float32, "y")],
        config=ModelConfig(batching=False),
    )
    spec = lower(repo).models[0]
    text = to_text(model_config(spec))
    assert text.splitlines()[:2] == ['name: "NB"', "max_batch_size: 0"]
    assert "dynamic_batching" not in text
    _roundtrip(spec)


def test_batching_default_is_pytriton_s():
    repo = Repository()

    @repo.model("D", inputs=[Tensor((-1,), np.float32)], outputs=[Tensor((-1,), np.float32)])
    @batch
    def f(INPUT_1):
        return {"OUTPUT_1": INPUT_1}

    config = _roundtrip(lower(repo).models[0])
    assert config.max_batch_size == 4
    assert config.HasField("dynamic_batching")
    assert [t.name for t in config.input] == ["INPUT_1"] and [t.name for t in config.output] == ["OUTPUT_1"]
