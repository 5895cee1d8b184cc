"""What a batch costs in copies and waits on a GPU instance, and that its answers are right, on the emulated GPU
(repogen.testing.emulated_gpu: real torch tensors that say they live on cuda:N, copies and kernels that land only
when a wait covers them, poison before) under the runtime's general path on the backend shim: one host-to-device
copy for all of a batch's inputs, one device-to-host copy per output, one wait, whatever the number of requests
(1, 4, 16); none of either for a numpy model; capsules after one wait where a GPU reads the outputs. A missing or
misplaced wait gives NaN here, not a log line. tests/gpu measures the same on a GPU and tritonserver."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request
from torch_cpu import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.ir import lower
from repogen.local import backend_shim as pb
from repogen.runtime import bls
from repogen.runtime.contract import FORCE_CPU_ONLY_INPUT_TENSORS
from repogen.testing.emulated_gpu import EmulatedTensor

F32 = np.float32
GPU_GROUP = [InstanceGroup(kind="KIND_GPU")]
AB = [Tensor(name="a", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))]
YZ = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))]
BATCHES = [1, 4, 16]


def crossings(gpu: Any) -> dict[str, int]:
    """What the runtime asked of the devices: copies each way, device-to-device copies, host waits, capsules."""
    c = gpu.counts
    return {"h2d": c["h2d async"] + c["h2d blocking"], "d2h": c["d2h async"] + c["d2h blocking"],
            "d2d": c["d2d"] + c["d2d peer"], "sync": c["sync"], "capsule": c["capsules"]}  # fmt: skip


def clear(gpu: Any) -> None:
    gpu.counts.clear()
    pb.COUNTS.clear()


def _model(repo: Repository, name: str, tmp_path, kind: str = "GPU", device: int = 0, lane: bool = True) -> Any:
    """An instance of ``name``; ``lane=False`` serves its batches by the general path (runtime/gpu_batch.py's lane
    left out), as a model that does not take the lane would be."""
    spec = lower(repo).model(name)
    args = initialize_args(spec, name, tmp_path, kind)
    args["model_instance_device_id"] = str(device)
    model = TritonPythonModel()
    output_memory = spec.placement.output_memory or "host"
    model.configure(args, list(spec.versions[-1].infer_funcs), spec.strict, spec.placement.tensors, None, output_memory)
    if not lane:
        model._lane = None
    return model


PATHS = pytest.mark.parametrize("lane", [True, False], ids=["lane", "general"])


def _requests(count: int) -> list[Any]:
    """``count`` requests of 1, 2, 3, ... rows: a of 1.0 per row, b of the request's number."""
    return [
        _request(a=np.ones((i + 1, 3), F32), b=np.full((i + 1, 3), i, F32)) for i in range(count)
    ]  # fmt: skip


def _values(response: Any) -> dict[str, Any]:
    """What a reader gets: numpy as sent, or a GPU reader's tensor copied out here to look at."""
    assert not response.has_error(), response.error().message()
    found = {}
    for tensor in response.output_tensors():
        value = tensor._array
        found[tensor.name()] = (value.tolist() if isinstance(value, np.ndarray) else
                                pb.GPU_RUNTIME.to_host(value).tolist())  # fmt: skip
    return found


def _answers(responses: list[Any], output_memory: str = "host") -> list[dict[str, Any]]:
    """The batch's answers as its reader takes them, once the server fetched what is on the GPU (``deliver``)."""
    return [_values(r) for r in pb.deliver(responses, output_memory)]


def _expected(count: int) -> list[dict[str, Any]]:
    return [{"y": np.full((i + 1, 3), 2.0).tolist(), "z": np.full((i + 1, 3), 1.0 + i).tolist()} for i in range(count)]


def _torch_model(output_memory: str | None = None) -> Repository:
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch", output_memory=output_memory)

    @repo.model("M", inputs=AB, outputs=YZ, config=config)
    @batch
    def m(a, b):
        assert isinstance(a, EmulatedTensor) and a.device.type == "cuda", "inputs on the instance's GPU"
        return {"y": a * 2, "z": a + b}

    return repo


@pytest.mark.parametrize("count", BATCHES)
@PATHS
def test_a_torch_batch_crosses_once_each_way(count, gpu, tmp_path, lane):
    model = _model(_torch_model(), "M", tmp_path, lane=lane)
    responses = model.execute(_requests(count))
    assert [_values(r) for r in responses] == _expected(count)
    assert crossings(gpu) == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}
    for response in responses:  # numpy views of pinned host memory: nothing left for the server to fetch
        assert all(type(t._array) is np.ndarray for t in response.output_tensors())


@pytest.mark.parametrize("count", BATCHES)
@PATHS
def test_the_next_batch_waits_for_nothing_more(count, gpu, tmp_path, lane):
    model = _model(_torch_model(), "M", tmp_path, lane=lane)
    model.execute(_requests(count))
    clear(gpu)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    assert crossings(gpu) == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}


@pytest.mark.parametrize("count", BATCHES)
def test_outputs_a_gpu_reads_leave_as_capsules_after_one_wait(count, gpu, tmp_path):
    model = _model(_torch_model(output_memory="gpu"), "M", tmp_path)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    assert crossings(gpu) == {"h2d": 1, "d2h": 0, "d2d": 0, "sync": 1, "capsule": 2 * count}


@pytest.mark.parametrize("count", BATCHES)
def test_a_numpy_model_crosses_nothing(count, gpu, tmp_path):
    repo = Repository()
    repo.bind("N", batch(lambda a, b: {"y": a * 2, "z": a + b}), inputs=AB, outputs=YZ,
              config=ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP))  # fmt: skip
    model = _model(repo, "N", tmp_path)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    assert crossings(gpu) == {"h2d": 0, "d2h": 0, "d2d": 0, "sync": 0, "capsule": 0}


@pytest.mark.parametrize("count", BATCHES)
def test_a_numpy_model_returning_gpu_tensors_sends_them_in_one_copy_each(count, gpu, tmp_path):
    repo = Repository()

    @repo.model("G", inputs=AB, outputs=YZ, config=ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP))
    @batch
    def g(a, b):
        rows = len(a)
        return {"y": torch.full((rows, 3), 2.0, dtype=torch.float32, device="cuda:0"),
                "z": torch.full((rows, 3), 5.0, dtype=torch.float32, device="cuda:0")}  # fmt: skip

    model = _model(repo, "G", tmp_path)
    found = _answers(model.execute(_requests(count)))
    assert found == [
        {"y": np.full((i + 1, 3), 2.0).tolist(), "z": np.full((i + 1, 3), 5.0).tolist()} for i in range(count)
    ]
    assert crossings(gpu) == {"h2d": 0, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}


@pytest.mark.parametrize("count", BATCHES)
def test_an_undecorated_callable_waits_once_for_its_requests_tensors(count, gpu, tmp_path):
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    repo.bind("U", lambda requests: [{"y": r["a"] * 2, "z": r["a"] + r["b"]} for r in requests],
              inputs=AB, outputs=YZ, config=config)  # fmt: skip
    model = _model(repo, "U", tmp_path)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    # each request's outputs are tensors of their own: a copy each, but still one wait for the batch
    assert crossings(gpu) == {"h2d": 1, "d2h": 2 * count, "d2d": 0, "sync": 1, "capsule": 0}


def _on_gpu(name: str, array: np.ndarray) -> Any:
    """An input python_backend hands over in GPU memory (an ensemble step's output, a BLS caller's tensor): in the
    server's CUDA pool, written before the model is called."""
    tensor = torch.from_numpy(array.copy()).to("cuda:0")
    return pb.Tensor(name, tensor)


@pytest.mark.parametrize("count", BATCHES)
def test_an_ensemble_step_takes_gpu_inputs_as_they_are(count, gpu, tmp_path):
    model = _model(_torch_model(), "M", tmp_path)
    requests = [
        pb.InferenceRequest([_on_gpu(name, array)
                             for name, array in (("a", np.ones((i + 1, 3), F32)), ("b", np.full((i + 1, 3), i, F32)))])
        for i in range(count)
    ]  # fmt: skip
    clear(gpu)
    assert _answers(model.execute(requests)) == _expected(count)
    # no copy in: joining the requests' rows, where they do not lie together, is a torch.cat on the device (a kernel)
    assert crossings(gpu) == {"h2d": 0, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}


@pytest.mark.parametrize("output_memory", ["gpu", "host", None])
def test_output_memory_travels_from_the_config_through_model_json_to_the_runtime(output_memory, gpu, tmp_path):
    """The one hop the tests above skip (they hand ``configure`` the IR's value): the build records where a GPU
    instance's outputs go in model.json, and the runtime loaded from the built files sends them there."""
    import json

    from repogen.build import build_repository
    from repogen.packages.options import PackageOptions

    repo = Repository()  # a lambda: pytest rewrites the asserts of _torch_model's function, which a build refuses
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch", output_memory=output_memory)
    repo.bind("M", batch(lambda a, b: {"y": a * 2, "z": a + b}), inputs=AB, outputs=YZ, config=config)
    built = build_repository(repo, tmp_path / "repo", packages=PackageOptions(mode="record"))
    meta = json.loads((tmp_path / "repo" / "M" / "1" / "model.json").read_text())
    assert meta.get("output_memory") == ("gpu" if output_memory == "gpu" else None)  # written only where not host
    model = TritonPythonModel()
    args = initialize_args(built.spec.model("M"), "M", tmp_path / "repo" / "M", "GPU")
    model.initialize(args)
    clear(gpu)
    assert _answers(model.execute(_requests(2)), meta.get("output_memory", "host")) == _expected(2)
    capsules = 4 if output_memory == "gpu" else 0
    assert crossings(gpu) == {"h2d": 1, "d2h": 2 - capsules // 2, "d2d": 0, "sync": 1, "capsule": capsules}


@pytest.mark.parametrize("count", BATCHES)
def test_a_fused_pipeline_crosses_once_each_way(count, gpu, tmp_path):
    from repogen.build import build_repository
    from repogen.packages.options import PackageOptions

    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    first = repo.bind("First", batch(lambda a, b: {"y": a * 2, "z": a + b}), inputs=AB, outputs=YZ, config=config)
    second = repo.bind("Second", batch(lambda y, z: {"y": y * 1, "z": z * 1}),
                       inputs=[Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))],
                       outputs=YZ, config=config)  # fmt: skip

    @repo.ensemble("Fused", inputs=AB, outputs=YZ, config=config, fuse=True)
    def fused(a, b):
        made = first(a=a, b=b)
        return second(y=made["y"], z=made["z"])

    built = build_repository(repo, tmp_path / "repo", packages=PackageOptions(mode="record"))
    spec = built.spec.fused_spec("Fused").model
    model = TritonPythonModel()
    args = initialize_args(spec, "Fused", tmp_path / "repo" / "Fused", "GPU")
    model.initialize(args)
    clear(gpu)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    assert crossings(gpu) == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}


def test_a_bls_call_sends_its_gpu_inputs_after_one_wait(gpu, monkeypatch):
    made = []
    backend = type("Backend", (), {"Tensor": pb.Tensor, "InferenceRequest": lambda **kwargs: made.append(kwargs)})
    monkeypatch.setattr(bls, "_backend", lambda: backend)
    client = bls.ModelClient("Callee", {"a": "TYPE_FP32", "b": "TYPE_FP32"}, ("y",), tensors="torch")
    a = torch.full((4, 3), 1.0, dtype=torch.float32, device="cuda:0")
    b = torch.full((4, 3), 2.0, dtype=torch.float32, device="cuda:0")
    client._request({"a": a, "b": b})
    assert [t.name() for t in made[0]["inputs"]] == ["a", "b"]
    assert [pb.GPU_RUNTIME.to_host(t._array).tolist() for t in made[0]["inputs"]] == [[[1.0] * 3] * 4, [[2.0] * 3] * 4]
    assert crossings(gpu) == {"h2d": 0, "d2h": 0, "d2d": 0, "sync": 1, "capsule": 2}


@pytest.mark.parametrize("count", BATCHES)
@PATHS
def test_a_gpu_out_of_memory_answers_the_batch_and_the_next_one_serves(count, gpu, tmp_path, lane):
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    asked = []

    @repo.model("Big", inputs=AB, outputs=YZ, config=config)
    @batch
    def big(a, b):
        asked.append(len(a))
        if len(asked) == 1:
            raise torch.cuda.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB"
            )
        return {"y": a * 2, "z": a + b}

    model = _model(repo, "Big", tmp_path, lane=lane)
    failed = model.execute(_requests(count))
    message = failed[0].error().message()
    assert message.startswith(
        "model 'Big' ran out of GPU memory on cuda:0 asking for 20.00 GiB (OutOfMemoryError: CUDA out"
    )
    assert "the instance serves the next one" in message and "lower max_batch_size" in message
    assert len(failed) == count and all(r.error().message() == message for r in failed)
    assert gpu.counts["empty_cache"] == 1
    assert _answers(model.execute(_requests(count))) == _expected(count)


def test_outputs_past_the_cuda_pool_go_through_host_memory_saying_which_flag(gpu, tmp_path):
    warnings = []
    model = _model(_torch_model(output_memory="gpu"), "M", tmp_path)
    model._departure.pool = 100  # bytes: every batch's outputs outgrow it
    model._departure.warn = warnings.append
    assert _answers(model.execute(_requests(4))) == _expected(4)
    assert crossings(gpu) == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}
    assert _answers(model.execute(_requests(4))) == _expected(4)  # said once, not at every batch
    assert len(warnings) == 1 and "--cuda-memory-pool-byte-size=<gpu>:<bytes>" in warnings[0]
    assert "outgrow tritonserver's CUDA memory pool (100 bytes)" in warnings[0]


def test_the_pool_is_read_from_the_servers_command_line():
    from repogen.runtime.contract.tritonserver_flags import CUDA_POOL_DEFAULT
    from repogen.runtime.transfers import pool_bytes

    assert pool_bytes(None, 0) == CUDA_POOL_DEFAULT
    argv = ["tritonserver", "--cuda-memory-pool-byte-size=0:268435456", "--cuda-memory-pool-byte-size", "1:512"]
    assert pool_bytes(argv, 0) == 268435456 and pool_bytes(argv, 1) == 512 and pool_bytes(argv, 2) == CUDA_POOL_DEFAULT
    # another flag's value is not the pool's; the flag last, without its value, leaves the default
    assert pool_bytes(["tritonserver", "--grpc-address=1:512"], 1) == CUDA_POOL_DEFAULT
    assert pool_bytes(["tritonserver", "--cuda-memory-pool-byte-size"], 0) == CUDA_POOL_DEFAULT


# -- who reads, who produces: decided by the build --------------------------------------------------------------------


def _placements(repo: Repository) -> dict[str, tuple[str | None, str | None]]:
    spec = lower(repo)
    return {
        m.name: (m.placement.output_memory, dict(m.parameters).get(FORCE_CPU_ONLY_INPUT_TENSORS)) for m in spec.models
    }


def test_the_build_sends_outputs_where_their_readers_take_them():
    repo = Repository()
    gpu_torch = ModelConfig(max_batch_size=8, instance_groups=GPU_GROUP, tensors="torch")
    gpu_numpy = ModelConfig(max_batch_size=8, instance_groups=GPU_GROUP)
    ident = batch(lambda a, b: {"y": a, "z": b})
    x = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))]
    producer = repo.bind("Producer", ident, inputs=AB, outputs=YZ, config=gpu_torch)
    consumer = repo.bind("Consumer", batch(lambda y, z: {"y": y, "z": z}), inputs=x, outputs=YZ, config=gpu_torch)
    to_numpy = repo.bind("ToNumpy", ident, inputs=AB, outputs=YZ, config=gpu_torch)
    numpy_reader = repo.bind(
        "NumpyReader", batch(lambda y, z: {"y": y, "z": z}), inputs=x, outputs=YZ, config=gpu_numpy
    )
    callee = repo.bind("Callee", ident, inputs=AB, outputs=YZ, config=gpu_torch)
    repo.bind("Caller", batch(lambda a, b: callee(a=a, b=b)), inputs=AB, outputs=YZ, config=gpu_torch)
    repo.bind("Alone", ident, inputs=AB, outputs=YZ, config=gpu_torch)
    said = ModelConfig(max_batch_size=8, instance_groups=GPU_GROUP, tensors="torch", output_memory="gpu")
    repo.bind("Said", ident, inputs=AB, outputs=YZ, config=said)

    @repo.ensemble("OnGpu", inputs=AB, outputs=YZ)
    def on_gpu(a, b):
        made = producer(a=a, b=b)
        return consumer(y=made["y"], z=made["z"])

    @repo.ensemble("ToHost", inputs=AB, outputs=YZ)
    def to_host(a, b):
        made = to_numpy(a=a, b=b)
        return numpy_reader(y=made["y"], z=made["z"])

    assert _placements(repo) == {
        "Producer": ("gpu", None),  # read by a torch step on a GPU
        "Consumer": ("host", "no"),  # read by the network; fed by a GPU step
        "ToNumpy": ("host", None),  # read by a numpy step: host memory is what it takes
        "NumpyReader": ("host", None),  # a numpy model: Triton copies GPU inputs to host for it
        "Callee": ("gpu", "no"),  # a torch caller on a GPU reads it and feeds it
        "Caller": ("host", None),
        "Alone": ("host", None),  # HTTP and gRPC inputs arrive in host memory either way
        "Said": ("gpu", None),  # the user's word (CUDA shared-memory clients)
    }


def test_output_memory_takes_host_gpu_or_none():
    from repogen.errors import BuildError

    repo = Repository()
    repo.bind(
        "M", batch(lambda a, b: {"y": a, "z": b}), inputs=AB, outputs=YZ, config=ModelConfig(output_memory="device")
    )
    with pytest.raises(BuildError, match=r"model 'M': output_memory must be \"host\" .*found 'device'"):
        lower(repo)


def test_a_stream_sends_each_gpu_token_with_one_copy_and_one_wait(gpu, tmp_path):
    repo = Repository()
    config = ModelConfig(batching=False, instance_groups=GPU_GROUP, tensors="torch")

    @repo.model("Tokens", inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
                outputs=[Tensor(name="token", dtype=F32, shape=(2,))], config=config)  # fmt: skip
    def tokens(requests):
        for step in range(int(requests[0]["n"].tolist()[0])):  # n is on the GPU too: tensors="torch"
            yield [{"token": torch.full((2,), float(step), dtype=torch.float32, device="cuda:0")}]

    model = _model(repo, "Tokens", tmp_path)
    request = _request(n=np.array([5], np.int32))
    sender = request.get_response_sender()
    model.execute([request])
    sent = [r for r, _ in sender.queue.queue if r is not None]
    assert [_values(r)["token"] for r in sent] == [[float(i)] * 2 for i in range(5)]
    assert crossings(gpu) == {"h2d": 1, "d2h": 5, "d2d": 0, "sync": 5, "capsule": 0}


# -- the order of copies and waits: what a mistake gives on the emulated device -------------------------------------


@pytest.mark.parametrize("count", BATCHES)
@PATHS
def test_a_model_on_gpu_1_is_waited_for_there(count, gpu, tmp_path, lane):
    """Instance on device 1: its inputs land there, the batch waits there (a wait on device 0 covers nothing)."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[1])],
                         tensors="torch")  # fmt: skip
    seen = []

    @repo.model("One", inputs=AB, outputs=YZ, config=config)
    @batch
    def one(a, b):
        seen.append(str(a.device))
        return {"y": a * 2, "z": a + b}

    model = _model(repo, "One", tmp_path, device=1, lane=lane)
    assert _answers(model.execute(_requests(count))) == _expected(count)
    assert seen == ["cuda:1"] and crossings(gpu) == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}


@PATHS
def test_staged_inputs_are_not_overwritten_before_their_copy_has_landed(gpu, tmp_path, lane):
    """A batch answered without a wait (its outputs made on the host) leaves its upload queued; the next batch must
    wait for it before writing the page-locked memory again, or the tensor a model kept holds the next batch's data.
    A model keeping its previous inputs on the GPU (a prompt, a cache) sees the difference."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    kept: list[Any] = []

    @repo.model("Keeper", inputs=AB, outputs=YZ, config=config)
    @batch
    def keeper(a, b):
        kept.append(a)  # no kernel reads it yet: the copy that fills it is still queued
        if len(kept) == 1:
            return {"y": np.zeros(tuple(a.shape), F32), "z": np.zeros(tuple(a.shape), F32)}
        return {"y": kept[0] * 1, "z": b}

    model = _model(repo, "Keeper", tmp_path, lane=lane)
    first = [_request(a=np.full((2, 3), 7.0, F32), b=np.zeros((2, 3), F32))]
    second = [_request(a=np.full((2, 3), 1.0, F32), b=np.full((2, 3), 3.0, F32))]
    assert _answers(model.execute(first)) == [{"y": [[0.0] * 3] * 2, "z": [[0.0] * 3] * 2}]
    assert _answers(model.execute(second)) == [{"y": [[7.0] * 3] * 2, "z": [[3.0] * 3] * 2}]


@pytest.mark.parametrize("count", [2, 4])
@PATHS
def test_an_output_read_before_its_copy_lands_is_poison(count, gpu, tmp_path, monkeypatch, lane):
    """The emulated device's own promise, shown on the runtime: skip the batch's wait and the answers are NaN."""
    from repogen.runtime import frameworks

    monkeypatch.setattr(frameworks.Torch, "synchronize", lambda self, device: None)
    model = _model(_torch_model(), "M", tmp_path, lane=lane)
    answers = _answers(model.execute(_requests(count)))
    assert all(np.isnan(answer["y"]).all() for answer in answers)


@pytest.mark.parametrize("count", [1, 4])
@PATHS
def test_a_failed_pinned_allocation_is_answered_as_out_of_memory_and_both_caches_are_freed(count, gpu, tmp_path, lane):
    """cudaHostAlloc's failure as torch raises it ("CUDA error: out of memory") while staging a batch's inputs."""
    model = _model(_torch_model(), "M", tmp_path, lane=lane)
    gpu.fail_pinned = 1
    failed = model.execute(_requests(count))
    message = failed[0].error().message()
    assert message.startswith("model 'M' ran out of GPU memory on cuda:0 (RuntimeError: CUDA error: out of memory)")
    assert "the instance serves the next one" in message and len(failed) == count
    assert gpu.counts["empty_cache"] == 1 and gpu.counts["host empty_cache"] == 1
    assert _answers(model.execute(_requests(count))) == _expected(count)


@pytest.mark.parametrize("waits", [True, False])
@PATHS
def test_a_callable_on_a_side_stream_must_make_the_current_stream_wait(waits, gpu, tmp_path, lane):
    """docs/gpu.md: the batch's wait follows the current stream; work on a side stream without ``wait_stream``
    is copied before it is written (NaN here), with it the answers are right."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")

    @repo.model("Side", inputs=AB, outputs=YZ, config=config)
    @batch
    def side(a, b):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())  # the inputs' copy came first
        with torch.cuda.stream(stream):
            y, z = a * 2, a + b
        if waits:
            torch.cuda.current_stream().wait_stream(stream)
        return {"y": y, "z": z}

    answers = _answers(_model(repo, "Side", tmp_path, lane=lane).execute(_requests(4)))
    if waits:
        assert answers == _expected(4)
    else:
        assert all(np.isnan(answer["y"]).all() for answer in answers)


def test_an_input_only_a_later_request_has_crosses_with_the_batch(gpu, tmp_path):
    """Optional inputs: every request's host inputs move, also a name the first request of the batch lacks."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    inputs = [Tensor(name="a", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,), optional=True)]
    places = []

    def f(requests):
        places.extend(str(r["b"].device) for r in requests if "b" in r)
        return [{"y": r["a"] * 2, "z": r["b"] if "b" in r else r["a"]} for r in requests]

    repo.bind("Opt", f, inputs=inputs, outputs=YZ, config=config)
    model = _model(repo, "Opt", tmp_path)
    requests = [_request(a=np.ones((1, 3), F32)), _request(a=np.ones((1, 3), F32), b=np.full((1, 3), 5.0, F32)),
                _request(a=np.ones((1, 3), F32), b=np.full((1, 3), 6.0, F32))]  # fmt: skip
    answers = _answers(model.execute(requests))
    assert places == ["cuda:0", "cuda:0"] and [a["z"] for a in answers] == [[[1.0] * 3], [[5.0] * 3], [[6.0] * 3]]
