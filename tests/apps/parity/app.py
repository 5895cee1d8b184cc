"""Triton features beyond the core path: instances, class models with shipped files and labels,
async and streaming callables, request parameters, and versions."""

import asyncio
import json
import os
import time

import numpy as np

from repogen import (
    InstanceGroup,
    ModelConfig,
    ModelContext,
    RateLimiter,
    Repository,
    SequenceBatcher,
    Tensor,
    VersionPolicy,
    Warmup,
    batch,
)

models = Repository()


def _who(index):
    def who(requests):
        time.sleep(0.2)  # long enough that concurrent requests need both instances
        return [{"instance": np.array([index], dtype=np.int32), "pid": np.array([os.getpid()], np.int64)}] * len(
            requests
        )

    return who


models.bind(
    "Twins",
    infer_func=[_who(0), _who(1)],
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="instance", dtype=np.int32, shape=(1,)), Tensor(name="pid", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False),
)


class Linear:
    """Loads its weights from a file shipped with the model, once per instance."""

    def __init__(self, context: ModelContext):
        self.weights = np.load(context.path("weights.npy"))
        self.device = f"{context.instance_kind}:{context.device_id}"

    @batch
    def __call__(self, x):
        return {"scores": (x @ self.weights).astype(np.float32)}


models.bind(
    "Linear",
    infer_func=Linear,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
    outputs=[Tensor(name="scores", dtype=np.float32, shape=(3,), labels=["cat", "dog", "emu"])],
    config=ModelConfig(max_batch_size=8),
    files=["weights.npy"],
)


@models.model(
    "Slow",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=4),
)
async def slow(requests):
    await asyncio.sleep(0.01)
    return [{"y": request["x"] + 1} for request in requests]


@models.model(
    "Countdown",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="tick", dtype=np.int32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def countdown(requests):
    n = int(requests[0]["n"][0])
    for value in range(n, 0, -1):
        if value == 13:
            raise RuntimeError("unlucky 13")
        yield [{"tick": np.array([value], dtype=np.int32)} for _ in requests]


@models.model(
    "Echo",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="parameters", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False, parameters={"FORCE_CPU_ONLY_INPUT_TENSORS": "yes"}),
)
def echo(requests):
    return [
        {"parameters": np.array([json.dumps(r.parameters, sort_keys=True).encode()], dtype=object)} for r in requests
    ]


def _versioned(version):
    def infer(requests):
        return [{"version": np.array([version], dtype=np.int32)} for _ in requests]

    return infer


for _name, _policy in (("AllVersions", None), ("LatestOnly", VersionPolicy.latest(1))):
    for _version in (1, 2):
        models.bind(
            _name,
            infer_func=_versioned(_version),
            inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
            outputs=[Tensor(name="version", dtype=np.int32, shape=(1,))],
            model_version=_version,
            config=ModelConfig(batching=False, version_policy=_policy),
        )


class Accumulator:
    """Per-sequence running sums: state lives in the instance, keyed by correlation id."""

    def __init__(self):
        self.sums = {}

    def __call__(self, requests):
        results = []
        for request in requests:
            if not request["READY"].ravel()[0]:  # an empty batch slot the direct strategy fills
                results.append({"total": np.zeros((1, 1), dtype=np.float32)})
                continue
            sequence = int(request["CORRID"].ravel()[0])
            if request["START"].ravel()[0]:
                self.sums[sequence] = 0.0
            self.sums[sequence] += float(request["x"].ravel()[0])
            results.append({"total": np.array([[self.sums[sequence]]], dtype=np.float32)})
            if request["END"].ravel()[0]:
                del self.sums[sequence]
        return results


models.bind(
    "Accumulator",
    infer_func=Accumulator,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=2, batcher=SequenceBatcher(max_sequence_idle_microseconds=5_000_000)),
)

_calls = []


@models.model(
    "Warmed",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4, warmup=[Warmup(name="zeros", batch_size=2, count=3, shapes={"x": (5,)})]),
)
@batch
def warmed(x):
    _calls.append(x.shape)  # warmup requests run in this process before the model is READY
    return {"calls": np.full((len(x), 1), len(_calls), dtype=np.int64)}


@models.model(
    "Cached",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False, response_cache=True),
)
def cached(requests):
    _calls.append(len(requests))
    return [{"calls": np.array([len(_calls)], dtype=np.int64)} for _ in requests]


@models.model(
    "Scalar",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,), reshape=())],
    outputs=[Tensor(name="ndim", dtype=np.int32, shape=(1,))],
    config=ModelConfig(
        max_batch_size=4,
        instance_groups=[InstanceGroup(count=1, rate_limiter=RateLimiter(resources={"R": 1}, priority=1))],
    ),
)
@batch
def scalar(x):
    return {"ndim": np.full((len(x), 1), x.ndim, dtype=np.int32)}
