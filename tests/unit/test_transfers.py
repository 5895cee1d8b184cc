"""What a batch costs in copies and waits on a GPU instance, counted with a recording stand-in of torch
(recording_torch.py) under the runtime's general path on the backend shim: one host-to-device copy for all of a
batch's inputs, one device-to-host copy per output, one wait, whatever the number of requests (1, 4, 16); none of
either for a numpy model; capsules after one wait where a GPU reads the outputs. tests/gpu measures the same on a
GPU and tritonserver."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import recording_torch
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request
from recording_torch import FakeTensor

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.ir import lower
from repogen.local import backend_shim as pb
from repogen.runtime import bls
from repogen.runtime.tensors import FORCE_CPU_ONLY_INPUT_TENSORS

F32 = np.float32
GPU_GROUP = [InstanceGroup(kind="KIND_GPU")]
AB = [Tensor(name="a", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))]
YZ = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))]
BATCHES = [1, 4, 16]


@pytest.fixture
def log():
    with recording_torch.installed() as recorded:
        yield recorded


def _model(repo: Repository, name: str, tmp_path, kind: str = "GPU") -> Any:
    spec = lower(repo).model(name)
    args = initialize_args(spec, name, tmp_path)
    args["model_instance_kind"] = kind
    model = TritonPythonModel()
    outputs_to = spec.placement.outputs_to
    model.configure(args, list(spec.versions[-1].infer_funcs), spec.strict, spec.placement.tensors, None, outputs_to)
    return model


def _requests(count: int) -> list[Any]:
    """``count`` requests of 1, 2, 3, ... rows: a of 1.0 per row, b of the request's number."""
    return [
        _request(a=np.ones((i + 1, 3), F32), b=np.full((i + 1, 3), i, F32)) for i in range(count)
    ]  # fmt: skip


def _values(response: Any) -> dict[str, Any]:
    assert not response.has_error(), response.error().message()
    found = {}
    for tensor in response.output_tensors():
        value = tensor._array
        found[tensor.name()] = value.tensor.tolist() if isinstance(value, recording_torch.Capsule) else value.tolist()
    return found


def _expected(count: int) -> list[dict[str, Any]]:
    return [{"y": np.full((i + 1, 3), 2.0).tolist(), "z": np.full((i + 1, 3), 1.0 + i).tolist()} for i in range(count)]


def _torch_model(output_memory: str | None = None) -> Repository:
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch", output_memory=output_memory)

    @repo.model("M", inputs=AB, outputs=YZ, config=config)
    @batch
    def m(a, b):
        assert isinstance(a, FakeTensor) and a.device.type == "cuda", "inputs on the instance's GPU"
        return {"y": a * 2, "z": a + b}

    return repo


@pytest.fixture
def capsules(monkeypatch):
    """python_backend's ``from_dlpack`` of a capsule, as the stub takes it: the tensor as it is, on its device."""
    monkeypatch.setattr(pb.Tensor, "from_dlpack", classmethod(lambda cls, name, value: cls(name, value)))


@pytest.mark.parametrize("count", BATCHES)
def test_a_torch_batch_crosses_once_each_way(count, log, tmp_path):
    model = _model(_torch_model(), "M", tmp_path)
    responses = model.execute(_requests(count))
    assert [_values(r) for r in responses] == _expected(count)
    assert log.counts() == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}, log.events
    for response in responses:  # numpy views of pinned host memory: nothing left for the server to fetch
        assert all(type(t._array) is np.ndarray for t in response.output_tensors())


@pytest.mark.parametrize("count", BATCHES)
def test_the_next_batch_waits_for_nothing_more(count, log, tmp_path):
    model = _model(_torch_model(), "M", tmp_path)
    model.execute(_requests(count))
    log.clear()
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)
    assert log.counts() == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_outputs_a_gpu_reads_leave_as_capsules_after_one_wait(count, log, tmp_path, capsules):
    model = _model(_torch_model(output_memory="gpu"), "M", tmp_path)
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)
    assert log.counts() == {"h2d": 1, "d2h": 0, "d2d": 0, "sync": 1, "capsule": 2 * count}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_a_numpy_model_crosses_nothing(count, log, tmp_path):
    repo = Repository()
    repo.bind("N", batch(lambda a, b: {"y": a * 2, "z": a + b}), inputs=AB, outputs=YZ,
              config=ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP))  # fmt: skip
    model = _model(repo, "N", tmp_path)
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)
    assert log.counts() == {"h2d": 0, "d2h": 0, "d2d": 0, "sync": 0, "capsule": 0}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_a_numpy_model_returning_gpu_tensors_sends_them_in_one_copy_each(count, log, tmp_path):
    torch = recording_torch.torch
    repo = Repository()

    @repo.model("G", inputs=AB, outputs=YZ, config=ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP))
    @batch
    def g(a, b):
        rows = len(a)
        return {"y": torch.full((rows, 3), 2.0, dtype=torch.float32, device="cuda:0"),
                "z": torch.full((rows, 3), 5.0, dtype=torch.float32, device="cuda:0")}  # fmt: skip

    model = _model(repo, "G", tmp_path)
    found = [_values(r) for r in model.execute(_requests(count))]
    assert found == [
        {"y": np.full((i + 1, 3), 2.0).tolist(), "z": np.full((i + 1, 3), 5.0).tolist()} for i in range(count)
    ]
    assert log.counts() == {"h2d": 0, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_an_undecorated_callable_waits_once_for_its_requests_tensors(count, log, tmp_path):
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=GPU_GROUP, tensors="torch")
    repo.bind("U", lambda requests: [{"y": r["a"] * 2, "z": r["a"] + r["b"]} for r in requests],
              inputs=AB, outputs=YZ, config=config)  # fmt: skip
    model = _model(repo, "U", tmp_path)
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)
    # each request's outputs are tensors of their own: a copy each, but still one wait for the batch
    assert log.counts() == {"h2d": 1, "d2h": 2 * count, "d2d": 0, "sync": 1, "capsule": 0}, log.events


class _OnGpu(pb.Tensor):
    """An input python_backend hands over in GPU memory (an ensemble step's output, a BLS caller's tensor)."""

    def is_cpu(self) -> bool:
        return False

    def to_dlpack(self) -> Any:
        return recording_torch.Capsule(self._array)


@pytest.mark.parametrize("count", BATCHES)
def test_an_ensemble_step_takes_gpu_inputs_as_they_are(count, log, tmp_path):
    torch = recording_torch.torch
    model = _model(_torch_model(), "M", tmp_path)
    requests = [
        pb.InferenceRequest([_OnGpu(name, torch.from_numpy(array.copy()).to("cuda:0", non_blocking=True))
                             for name, array in (("a", np.ones((i + 1, 3), F32)), ("b", np.full((i + 1, 3), i, F32)))])
        for i in range(count)
    ]  # fmt: skip
    log.clear()
    assert [_values(r) for r in model.execute(requests)] == _expected(count)
    # no copy in: joining the requests' rows is the framework's one copy on the device, where they do not lie together
    assert log.counts() == {"h2d": 0, "d2h": 2, "d2d": 2 if count > 1 else 0, "sync": 1, "capsule": 0}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_a_fused_pipeline_crosses_once_each_way(count, log, tmp_path):
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
    args = initialize_args(spec, "Fused", tmp_path / "repo" / "Fused")
    args["model_instance_kind"] = "GPU"
    model.initialize(args)
    log.clear()
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)
    assert log.counts() == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}, log.events


def test_a_bls_call_sends_its_gpu_inputs_after_one_wait(log, monkeypatch):
    torch = recording_torch.torch
    made = []
    backend = type("Backend", (), {
        "Tensor": type("T", (), {"__init__": lambda self, name, array: None,
                                 "from_dlpack": staticmethod(lambda name, capsule: (name, capsule))}),
        "InferenceRequest": lambda **kwargs: made.append(kwargs),
    })  # fmt: skip
    monkeypatch.setattr(bls, "_backend", lambda: backend)
    client = bls.ModelClient("Callee", {"a": "TYPE_FP32", "b": "TYPE_FP32"}, ("y",), tensors="torch")
    a = torch.full((4, 3), 1.0, dtype=torch.float32, device="cuda:0")
    b = torch.full((4, 3), 2.0, dtype=torch.float32, device="cuda:0")
    client._request({"a": a, "b": b})
    assert [name for name, _ in made[0]["inputs"]] == ["a", "b"]
    assert log.counts() == {"h2d": 0, "d2h": 0, "d2d": 0, "sync": 1, "capsule": 2}, log.events


@pytest.mark.parametrize("count", BATCHES)
def test_a_gpu_out_of_memory_answers_the_batch_and_the_next_one_serves(count, log, tmp_path):
    torch = recording_torch.torch
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

    model = _model(repo, "Big", tmp_path)
    failed = model.execute(_requests(count))
    message = failed[0].error().message()
    assert message.startswith(
        "model 'Big' ran out of GPU memory on cuda:0 asking for 20.00 GiB (OutOfMemoryError: CUDA out"
    )
    assert "the instance serves the next one" in message and "lower max_batch_size" in message
    assert len(failed) == count and all(r.error().message() == message for r in failed)
    assert log.count("empty_cache") == 1
    assert [_values(r) for r in model.execute(_requests(count))] == _expected(count)


def test_outputs_past_the_cuda_pool_go_through_host_memory_saying_which_flag(log, tmp_path, capsules):
    warnings = []
    model = _model(_torch_model(output_memory="gpu"), "M", tmp_path)
    model._departure.pool = 100  # bytes: every batch's outputs outgrow it
    model._departure.warn = warnings.append
    assert [_values(r) for r in model.execute(_requests(4))] == _expected(4)
    assert log.counts() == {"h2d": 1, "d2h": 2, "d2d": 0, "sync": 1, "capsule": 0}, log.events
    assert len(warnings) == 1 and "--cuda-memory-pool-byte-size=<gpu>:<bytes>" in warnings[0]
    assert "outgrow tritonserver's CUDA memory pool (100 bytes)" in warnings[0]


def test_the_pool_is_read_from_the_servers_command_line():
    from repogen.runtime.transfers import CUDA_POOL_DEFAULT, pool_bytes

    assert pool_bytes(None, 0) == CUDA_POOL_DEFAULT
    argv = ["tritonserver", "--cuda-memory-pool-byte-size=0:268435456", "--cuda-memory-pool-byte-size", "1:512"]
    assert pool_bytes(argv, 0) == 268435456 and pool_bytes(argv, 1) == 512 and pool_bytes(argv, 2) == CUDA_POOL_DEFAULT


# -- who reads, who produces: decided by the build --------------------------------------------------------------------


def _placements(repo: Repository) -> dict[str, tuple[str, str | None]]:
    spec = lower(repo)
    return {m.name: (m.placement.outputs_to, dict(m.parameters).get(FORCE_CPU_ONLY_INPUT_TENSORS)) for m in spec.models}


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


def test_a_stream_sends_each_gpu_token_with_one_copy_and_one_wait(log, tmp_path):
    torch = recording_torch.torch
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
    assert log.counts() == {"h2d": 1, "d2h": 5, "d2d": 0, "sync": 5, "capsule": 0}, log.events
