"""IR → Triton's ``ModelConfig`` protobuf message, printed with ``text_format``."""

from __future__ import annotations

import io

from google.protobuf import text_format

from ..ir.spec import (
    DynamicBatchingSpec,
    EnsembleSpec,
    IOSpec,
    ModelSpec,
    QueuePolicySpec,
    SequenceBatchingSpec,
    WarmupSpec,
)
from ..triton.proto import model_config_pb2 as mc

_MAX_BATCH_SIZE = mc.ModelConfig.DESCRIPTOR.fields_by_name["max_batch_size"]


def model_config(spec: ModelSpec, backend: str = "python", platform: str = "") -> mc.ModelConfig:
    """A served model's config; ``backend`` is "python" but for exported networks ("onnxruntime", or ""
    with a ``platform`` such as "pytorch_libtorch")."""
    config = mc.ModelConfig(name=spec.name, backend=backend, platform=platform, max_batch_size=spec.max_batch_size)
    config.input.extend(_input(t) for t in spec.inputs)
    config.output.extend(_output(t, index) for index, t in enumerate(spec.outputs))
    for group in spec.instance_groups:
        message = config.instance_group.add(
            name=group.name, kind=mc.ModelInstanceGroup.Kind.Value(group.kind), count=group.count, gpus=group.gpus
        )
        if group.rate_limiter is not None:
            message.rate_limiter.priority = group.rate_limiter.priority
            for name, is_global, count in group.rate_limiter.resources:
                message.rate_limiter.resources.add(name=name, count=count, **{"global": is_global})
    if isinstance(spec.scheduler, DynamicBatchingSpec):
        _dynamic_batching(config.dynamic_batching, spec.scheduler)
    elif isinstance(spec.scheduler, SequenceBatchingSpec):
        _sequence_batching(config.sequence_batching, spec.scheduler)
    for warmup in spec.warmup:
        _warmup(config.model_warmup.add(), warmup)
    if spec.response_cache:
        config.response_cache.enable = True
    if spec.decoupled:
        config.model_transaction_policy.decoupled = True
    for key, value in spec.parameters:
        config.parameters[key].string_value = value
    if spec.version_policy is not None:
        kind, numbers = spec.version_policy
        if kind == "latest":
            config.version_policy.latest.num_versions = numbers[0]
        elif kind == "all":
            config.version_policy.all.SetInParent()
        else:
            config.version_policy.specific.versions.extend(numbers)
    return config


def ensemble_config(spec: EnsembleSpec) -> mc.ModelConfig:
    """``platform: "ensemble"``: no backend, no instance groups, no scheduler but its steps."""
    config = mc.ModelConfig(name=spec.name, platform="ensemble", max_batch_size=spec.max_batch_size)
    config.input.extend(_input(t) for t in spec.inputs)
    config.output.extend(_output(t, index) for index, t in enumerate(spec.outputs))
    for step in spec.steps:
        message = config.ensemble_scheduling.step.add(model_name=step.model, model_version=-1)
        message.input_map.update(dict(step.input_map))
        message.output_map.update(dict(step.output_map))
    return config


def to_text(config: mc.ModelConfig) -> str:
    """Proto3 text output drops zero values; ``max_batch_size: 0`` is always written explicitly.

    It goes right after ``name``: Triton reads fields in any order, and a reader of the file
    sees at once that the model does not batch.
    """
    text = text_format.MessageToString(config)
    if config.max_batch_size:
        return text
    head = text_format.MessageToString(mc.ModelConfig(name=config.name))
    zero = io.StringIO()
    text_format.PrintField(_MAX_BATCH_SIZE, 0, zero)
    return head + zero.getvalue() + text[len(head) :]


def _input(tensor: IOSpec) -> mc.ModelInput:
    message = mc.ModelInput(
        name=tensor.name,
        data_type=mc.DataType.Value(tensor.data_type),
        dims=list(tensor.dims),
        optional=tensor.optional,
    )
    if tensor.reshape is not None:
        message.reshape.SetInParent()  # an empty reshape (a scalar) is meaningful
        message.reshape.shape.extend(tensor.reshape)
    return message


def label_file(index: int) -> str:
    """Triton reads ``label_filename`` from the model directory."""
    return f"labels_{index}.txt"


def _output(tensor: IOSpec, index: int) -> mc.ModelOutput:
    message = mc.ModelOutput(
        name=tensor.name,
        data_type=mc.DataType.Value(tensor.data_type),
        dims=list(tensor.dims),
        label_filename=label_file(index) if tensor.labels else "",
    )
    if tensor.reshape is not None:
        message.reshape.SetInParent()
        message.reshape.shape.extend(tensor.reshape)
    return message


def _dynamic_batching(message: mc.ModelDynamicBatching, spec: DynamicBatchingSpec) -> None:
    message.SetInParent()  # `dynamic_batching {}` with all defaults is meaningful: it enables batching
    message.max_queue_delay_microseconds = spec.max_queue_delay_microseconds
    message.preferred_batch_size.extend(spec.preferred_batch_size)
    message.preserve_ordering = spec.preserve_ordering
    message.priority_levels = spec.priority_levels
    message.default_priority_level = spec.default_priority_level
    if spec.default_queue_policy is not None:
        message.default_queue_policy.CopyFrom(_queue_policy(spec.default_queue_policy))
    for level, policy in spec.priority_queue_policy:
        message.priority_queue_policy[level].CopyFrom(_queue_policy(policy))


def _queue_policy(spec: QueuePolicySpec) -> mc.ModelQueuePolicy:
    return mc.ModelQueuePolicy(
        timeout_action=mc.ModelQueuePolicy.TimeoutAction.Value(spec.timeout_action),
        default_timeout_microseconds=spec.default_timeout_microseconds,
        allow_timeout_override=spec.allow_timeout_override,
        max_queue_size=spec.max_queue_size,
    )


_FLAG_KINDS = ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY")


def _sequence_batching(message: mc.ModelSequenceBatching, spec: SequenceBatchingSpec) -> None:
    message.SetInParent()
    message.max_sequence_idle_microseconds = spec.max_sequence_idle_microseconds
    for control in spec.controls:
        entry = message.control_input.add(name=control.name).control.add(
            kind=mc.ModelSequenceBatching.Control.Kind.Value(control.kind)
        )
        if control.kind in _FLAG_KINDS:
            entry.int32_false_true.extend([0, 1])
        else:
            entry.data_type = mc.DataType.Value(control.data_type)
    if spec.strategy == "oldest":
        message.oldest.max_candidate_sequences = spec.max_candidate_sequences
        message.oldest.preferred_batch_size.extend(spec.preferred_batch_size)
        message.oldest.max_queue_delay_microseconds = spec.max_queue_delay_microseconds
    else:
        message.direct.SetInParent()
        message.direct.max_queue_delay_microseconds = spec.max_queue_delay_microseconds


def _warmup(message: mc.ModelWarmup, spec: WarmupSpec) -> None:
    message.name = spec.name
    message.batch_size = spec.batch_size
    message.count = spec.count
    for name, data_type, dims, data in spec.inputs:
        entry = message.inputs[name]
        entry.data_type = mc.DataType.Value(data_type)
        entry.dims.extend(dims)
        if data == "random":
            entry.random_data = True
        else:
            entry.zero_data = True
