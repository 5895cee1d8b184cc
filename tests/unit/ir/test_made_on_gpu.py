"""Models made on a GPU at bind time: where their instances run, and their tensors landing on each one's device.

PyTriton's ``multi_instance_resnet50_pytorch`` binds ``model.half().to(device)``, one callable per device. No
CUDA tensor can exist on this machine (torch's CPU build), so the two seams the build asks, ``on_cuda`` and
``cuda_index`` of ``repogen.pickling.cuda_scan``, are pointed at chosen CPU tensors; everything else runs for real: the
walk, the instance groups, the pickling, the runtime unpickling in a stand-in instance onto the device it says
(``meta`` standing for a GPU), the callable each instance serves, the CLI's lines. tests/gpu/test_gpu_made_on_gpu.py
serves the same on a GPU.
"""

from __future__ import annotations

import functools
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from general_path import TritonPythonModel, initialize_args, request
from torch_cpu import torch  # noqa: E402  (a failure naming `make frameworks` where it is missing)

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.cli import cli
from repogen.emit.model_files import MADE_ON_GPU as EMITTED_KEY
from repogen.ir import lower
from repogen.ir.spec import ModelSpec
from repogen.ondisk.describe import MADE_ON_GPU as SHOWN_KEY
from repogen.packages.options import PackageOptions
from repogen.pickling import cuda_scan as devices
from repogen.pickling import picklers as pickling
from repogen.runtime import devices as runtime_devices
from repogen.runtime import payload as runtime_payload
from repogen.runtime import rebuilt_tensors, triton_model
from repogen.runtime.context import TritonContext, instance_index
from repogen.runtime.payload import load_payload

X = [Tensor(name="x", dtype=np.float32, shape=(4,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(2,))]
BATCHED = ModelConfig(max_batch_size=8)


@pytest.fixture
def cuda(monkeypatch):
    """``cuda.mark(tensor_or_module, index)``: what the build takes for a CUDA tensor on GPU ``index``."""

    class Marks(dict):
        def mark(self, obj: Any, index: int = 0) -> Any:
            tensors = [*obj.parameters(), *obj.buffers()] if isinstance(obj, torch.nn.Module) else [obj]
            self.update({id(t): index for t in tensors})
            return obj

    marks = Marks()
    monkeypatch.setattr(devices, "on_cuda", lambda t: id(t) in marks)
    monkeypatch.setattr(devices, "cuda_index", lambda t: marks[id(t)])
    return marks


class Wrapper:
    """PyTriton's ``_InferFuncWrapper``: the model made at bind time, and the device its inputs go to."""

    def __init__(self, model: Any, device: str):
        self._model = model
        self._device = device

    @batch
    def __call__(self, x):
        with torch.no_grad():
            return {"y": self._model(torch.from_numpy(x)).numpy()}


def _linear(seed: int) -> Any:
    torch.manual_seed(seed)
    return torch.nn.Linear(4, 2).eval()


def _pair(cuda: Any, index: int = 0) -> list[Wrapper]:
    """``_infer_function_factory(devices=["cuda", "cpu"])`` of PyTriton's binding docs."""
    return [Wrapper(cuda.mark(_linear(0), index), "cuda"), Wrapper(_linear(1), "cpu")]


def _spec(infer_func: Any, config: ModelConfig = BATCHED, name: str = "Linear") -> ModelSpec:
    repo = Repository()
    repo.bind(name, infer_func=infer_func, inputs=X, outputs=Y, config=config)
    return lower(repo, cuda_scan=devices.cuda_callables).model(name)


def _groups(spec: ModelSpec) -> list[tuple[str, str, int, tuple[int, ...]]]:
    return [(g.name, g.kind, g.count, g.gpus) for g in spec.instance_groups]


# -- what the build finds ------------------------------------------------------------------------------------------


def test_a_module_answers_for_its_parameters_and_buffers(cuda):
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    cuda.mark(net[1].running_mean, 1)
    found = devices.find_cuda("infer_func", Wrapper(net, "cuda:1"))
    assert found is not None
    assert found.at == "infer_func -> attribute '_model' -> buffer '1.running_mean'"
    assert found.devices == (1,)
    assert found.names == (("infer_func -> attribute '_device'", 1),)


def test_cuda_tensors_are_found_wherever_pickling_takes_them(cuda):
    weights = cuda.mark(torch.ones(2), 2)
    closure = (lambda w: lambda x: x * w)(weights)
    assert devices.find_cuda("infer_func", closure).at == "infer_func -> closure variable 'w'"
    partial = functools.partial(lambda x, w: x * w, w={"scale": weights})
    assert devices.find_cuda("infer_func", partial).at == "infer_func -> partial argument 'w' -> ['scale']"
    holder = torch.nn.Module()
    holder.scale = weights  # a plain tensor attribute: neither parameter nor buffer
    assert devices.find_cuda("f", holder).at == "f -> attribute 'scale'"
    assert devices.find_cuda("f", holder).devices == (2,)


def test_a_callable_without_cuda_tensors_holds_none(cuda):
    assert devices.find_cuda("infer_func", Wrapper(_linear(0), "cpu")) is None


def test_a_build_that_never_imported_torch_walks_nothing(cuda, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch")
    assert devices.find_cuda("infer_func", object()) is None


def test_the_walk_is_bounded(cuda, monkeypatch):
    monkeypatch.setattr(devices, "LIMIT", 50)
    buried = [[i] for i in range(100)] + [cuda.mark(torch.ones(1))]
    assert devices.find_cuda("infer_func", buried) is None  # past the limit: not found


def test_a_huge_container_is_neither_walked_nor_queued_whole(cuda, monkeypatch):
    many = [[i] for i in range(300_000)] + [cuda.mark(torch.ones(1))]
    drawn = []  # every part the walk took out of an object: counted, not timed
    parts = devices._parts

    def counted(obj, module):
        for part in parts(obj, module):
            drawn.append(part)
            yield part

    monkeypatch.setattr(devices, "_parts", counted)
    assert devices.find_cuda("infer_func", many) is None  # beyond the 20,000 objects walked
    assert len(drawn) <= 3 * devices.LIMIT  # the list's 300,001 items were not all drawn nor queued
    assert devices.find_cuda("infer_func", [many[-1], *many]) is not None  # within them


# -- where the instances run ---------------------------------------------------------------------------------------


def test_a_cuda_and_a_cpu_callable_get_a_gpu_and_a_cpu_instance_in_their_order(cuda):
    spec = _spec(_pair(cuda))
    assert _groups(spec) == [("Linear_0", "KIND_GPU", 1, (0,)), ("Linear_1", "KIND_CPU", 1, ())]
    cpu_first = _spec(list(reversed(_pair(cuda))))
    assert _groups(cpu_first) == [("Linear_0", "KIND_CPU", 1, ()), ("Linear_1", "KIND_GPU", 1, (0,))]


def test_the_gpu_instance_is_on_the_gpu_the_build_used(cuda):
    assert _groups(_spec(_pair(cuda, index=1))) == [("Linear_0", "KIND_GPU", 1, (1,)), ("Linear_1", "KIND_CPU", 1, ())]
    one = _spec(Wrapper(cuda.mark(_linear(0), 3), "cuda"))
    assert _groups(one) == [("Linear_0", "KIND_GPU", 1, (3,))]


def test_pytritons_resnet_example_gets_two_gpu_instances_on_the_gpu_it_named(cuda):
    """multi_instance_resnet50_pytorch: DEVICE = "cuda:0", two callables, each model moved there."""
    spec = _spec([Wrapper(cuda.mark(_linear(seed).half(), 0), "cuda:0") for seed in range(2)])
    assert _groups(spec) == [("Linear_0", "KIND_GPU", 1, (0,)), ("Linear_1", "KIND_GPU", 1, (0,))]
    assert [note.callable for note in spec.made_on_gpu] == ["infer_func[0]", "infer_func[1]"]
    assert all("It names" not in note.runs for note in spec.made_on_gpu)  # "cuda:0" is where each instance is


def test_a_callable_spread_over_two_gpus_is_put_on_the_first_and_told_so(cuda):
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    cuda.mark(net[0], 0)
    cuda.mark(net[1], 1)
    spec = _spec(Wrapper(net, "cuda"))
    assert _groups(spec) == [("Linear_0", "KIND_GPU", 1, (0,))]
    (note,) = spec.made_on_gpu
    assert note.devices == (0, 1)
    assert note.message("Linear").startswith(
        "model 'Linear': infer_func holds CUDA tensors (made on cuda:0 and cuda:1,"
    )
    assert note.runs.endswith("; it held tensors on 2 GPUs, and all load onto the instance's one device")


def test_each_instance_serves_the_callable_made_for_its_device(cuda):
    """The runtime's instance_index, from the names and device ids Triton gives each instance, picks callable i."""
    callables = [
        Wrapper(cuda.mark(_linear(0), 0), "cuda"),
        Wrapper(_linear(1), "cpu"),
        Wrapper(cuda.mark(_linear(2), 1), "cuda"),
    ]
    spec = _spec(callables)
    args = initialize_args(spec, "Linear", Path("/nowhere"))
    config = {
        "instance_group": [{"name": g.name, "count": g.count, "gpus": list(g.gpus)} for g in spec.instance_groups]
    }
    served = {}
    for group in spec.instance_groups:
        device = group.gpus[0] if group.gpus else 0
        instance = {**args, "model_instance_name": f"{group.name}_0", "model_instance_device_id": str(device)}
        served[group.name] = instance_index(instance, config)
    assert served == {"Linear_0": 0, "Linear_1": 1, "Linear_2": 2}
    assert [(g.kind, g.gpus) for g in spec.instance_groups] == [
        ("KIND_GPU", (0,)),
        ("KIND_CPU", ()),
        ("KIND_GPU", (1,)),
    ]


def test_a_model_of_cpu_callables_keeps_one_cpu_group(cuda):
    assert _groups(_spec([Wrapper(_linear(0), "cpu"), Wrapper(_linear(1), "cpu")])) == [("Linear_0", "KIND_CPU", 2, ())]
    assert _spec(Wrapper(_linear(0), "cpu")).made_on_gpu == ()


def test_instance_groups_given_are_kept_and_the_build_says_where_the_tensors_load(cuda):
    cpu_only = _spec(
        Wrapper(cuda.mark(_linear(0)), "cuda"), ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(count=2)])
    )
    assert _groups(cpu_only) == [("Linear_0", "KIND_CPU", 2, ())]
    (note,) = cpu_only.made_on_gpu
    assert note.message("Linear") == (
        "model 'Linear': infer_func holds CUDA tensors (made on cuda:0, at infer_func -> attribute '_model' -> "
        "parameter 'weight'): its instances are KIND_CPU (instance_groups), so its tensors load onto the CPU; give it "
        "a KIND_GPU group to run it on a GPU"
    )
    everywhere = ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU")])
    (note,) = _spec(Wrapper(cuda.mark(_linear(0)), "cuda"), everywhere).made_on_gpu
    assert note.runs == "KIND_GPU instances on every GPU (instance_groups); its tensors load onto each instance's GPU"


def test_a_gpu_named_by_index_where_the_instance_may_be_elsewhere_is_named(cuda):
    """PyTriton's ResNet example names "cuda:0" for its inputs: fine on GPU 0, apart from its weights on GPU 1."""
    on_1 = ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[1])])
    (note,) = _spec(Wrapper(cuda.mark(_linear(0)), "cuda:0"), on_1).made_on_gpu
    assert note.runs == (
        "KIND_GPU instances on GPU 1 (instance_groups); its tensors load onto each instance's GPU. It names cuda:0 "
        "(at infer_func -> attribute '_device'), which stays GPU 0 in the server: on an instance on another GPU its "
        'inputs would go there and its tensors would not. Name "cuda" instead (the instance\'s own GPU in the '
        "server), or give it gpus=[0]"
    )
    (default,) = _spec(Wrapper(cuda.mark(_linear(0)), "cuda:0")).made_on_gpu
    assert "It names" not in default.runs  # gpus=[0]: where it names


APP = """
import numpy as np
import torch

from repogen import ModelConfig, Repository, Tensor
from repogen.pickling import cuda_scan as devices

marked = set()
devices.on_cuda = lambda tensor: id(tensor) in marked  # the test's fixture puts the real ones back
devices.cuda_index = lambda tensor: 0


class Wrapper:
    def __init__(self, model, device):
        self._model = model
        self._device = device

    def __call__(self, requests):
        return requests


def factory(devices):
    made = []
    for device in devices:
        model = torch.nn.Linear(4, 2).eval()
        if device == "cuda":  # what .to("cuda") would have made
            marked.update(id(p) for p in model.parameters())
        made.append(Wrapper(model, device))
    return made


models = Repository()
models.bind("ResNet", infer_func=factory(["cuda", "cpu"]), inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(2,))], config=ModelConfig(max_batch_size=8))
"""


def test_the_cli_says_what_it_decided(cuda, tmp_path):
    (tmp_path / "gpu_app.py").write_text(APP)
    command = ["build", f"{tmp_path / 'gpu_app.py'}:models", "-o", str(tmp_path / "repo"), "--packages", "record"]
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("Made on a GPU at bind time (each tensor loads onto its instance's device in the server):")
    assert lines[at + 1 : at + 3] == [
        "  model 'ResNet': infer_func[0] holds CUDA tensors (made on cuda:0, at infer_func[0] -> attribute '_model' "
        "-> parameter 'weight'): one KIND_GPU instance, on GPU 0 where the build made them (gpus=[0]); its tensors "
        'load onto the instance\'s GPU (instance_groups=[InstanceGroup(kind="KIND_GPU")] puts one on every GPU)',
        "  model 'ResNet': infer_func[1] holds no CUDA tensors: one KIND_CPU instance",
    ]
    config = (tmp_path / "repo" / "ResNet" / "config.pbtxt").read_text()
    assert 'name: "ResNet_0"\n  count: 1\n  gpus: 0\n  kind: KIND_GPU' in config
    assert 'name: "ResNet_1"\n  count: 1\n  kind: KIND_CPU' in config
    recorded = json.loads((tmp_path / "repo" / "ResNet" / "1" / "model.json").read_text())[EMITTED_KEY]
    assert [(e["callable"], e["devices"]) for e in recorded] == [("infer_func[0]", [0]), ("infer_func[1]", [])]
    shown = CliRunner().invoke(cli, ["inspect", str(tmp_path / "repo")]).output.splitlines()
    assert [line for line in shown if "made on a GPU" in line] == [
        "  made on a GPU at bind time (v1): " + line.strip().removeprefix("model 'ResNet': ")
        for line in lines[at + 1 : at + 3]
    ]
    described = json.loads(CliRunner().invoke(cli, ["inspect", "--json", str(tmp_path / "repo")]).stdout)
    assert described["models"][0][SHOWN_KEY] == {"1": recorded}
    assert SHOWN_KEY == EMITTED_KEY  # the key the build writes is the one inspect reads


# -- the tensors, pickled and unpickled ----------------------------------------------------------------------------


def _unpickled(obj: Any, device: str | None) -> Any:
    data = pickling.dumps(obj).data
    if device is None:
        return pickle.loads(data)
    with runtime_payload.loading_on(device):
        return pickle.loads(data)


@pytest.mark.parametrize("device", ["cpu", "meta", None])
def test_cuda_tensors_land_on_the_device_the_instance_says(cuda, device):
    net = cuda.mark(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).half())
    net[0].bias.requires_grad_(False)
    loose = cuda.mark(torch.arange(3.0, requires_grad=True))
    back = _unpickled(Wrapper(net, "cuda"), device)._model
    tensors = _unpickled(loose, device)
    where = device or "cpu"  # outside an instance: the CPU
    for name, tensor in [*back.named_parameters(), *back.named_buffers(), ("loose", tensors)]:
        assert tensor.device.type == where, name
    assert type(back[0].weight) is torch.nn.Parameter and type(back[1].running_mean) is torch.Tensor
    assert (back[0].weight.requires_grad, back[0].bias.requires_grad, tensors.requires_grad) == (True, False, True)
    assert back[0].weight.dtype == torch.float16 and back[0].weight.shape == (3, 4)
    if where == "cpu":
        assert torch.equal(back[0].weight, net[0].weight) and torch.equal(tensors, loose)


def test_a_gpu_instance_whose_torch_cannot_reach_its_gpu_fails_to_load_saying_why(cuda):
    weight = cuda.mark(torch.ones(2, 3, dtype=torch.float16))
    data = pickling.dumps(weight).data
    with runtime_payload.loading_on("cuda:1", "ResNet"), pytest.raises(RuntimeError) as failed:
        pickle.loads(data)
    assert str(failed.value).startswith(
        "model 'ResNet': a tensor made on a GPU at bind time ((2, 3) torch.float16) cannot load onto cuda:1, the "
        "device of this KIND_GPU instance ("
    )
    assert str(failed.value).endswith(
        "the server's torch needs CUDA and the GPU room for the model's weights, or give the model a KIND_CPU "
        "instance_group"
    )
    assert rebuilt_tensors.loading_device() == "cpu"


def test_tied_weights_stay_one_tensor(cuda):
    encoder, decoder = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    decoder.weight = encoder.weight  # one Parameter in two modules
    both = cuda.mark(torch.nn.ModuleDict({"encoder": encoder, "decoder": decoder}))
    back = _unpickled(both, "meta")
    assert back["decoder"].weight is back["encoder"].weight
    assert back["encoder"].weight.device.type == "meta"


def test_host_tensors_pickle_as_torch_pickles_them(cuda):
    plain = torch.ones(2)
    assert pickling.dumps(plain).data == pickling.dumps(plain).data
    assert b"repogen.runtime.rebuilt_tensors" not in pickling.dumps(plain).data
    assert b"repogen.runtime.rebuilt_tensors" in pickling.dumps(cuda.mark(torch.ones(2))).data


def _served_apart(callables: list[Any], device: str, instance: int) -> list[Any]:
    """``infer_func=callables`` pickled as a model's payload is, unpickled by instance ``instance`` on ``device``."""
    labelled = [(f"infer_func[{i}]", f) for i, f in enumerate(callables)]
    data = pickling.dumps({"infer_funcs": callables}, owners=devices.owners(labelled)).data
    with runtime_payload.loading_on(device, "Linear", instance):
        return pickle.loads(data)["infer_funcs"]


def test_each_instance_keeps_only_the_tensors_of_the_callable_it_serves(cuda):
    """The CPU instance of ["cuda", "cpu"] holds no copy of the GPU model's weights; the GPU one, both callables'
    host-made ones as they were (they were never on a GPU)."""
    cpu_instance = _served_apart(_pair(cuda), "cpu", instance=1)
    assert cpu_instance[0]._model.weight.device.type == "meta"  # callable 0's: no memory here
    assert cpu_instance[1]._model.weight.device.type == "cpu"
    gpu_instance = _served_apart(_pair(cuda), "cpu", instance=0)  # "cpu" for its GPU: torch's CPU build
    assert gpu_instance[0]._model.weight.device.type == "cpu"
    assert type(cpu_instance[0]._model.weight) is torch.nn.Parameter


def test_two_gpu_instances_do_not_each_keep_both_models(cuda):
    """multi_instance_resnet50_pytorch: two callables on "cuda:0", one instance each on GPU 0."""
    made = [Wrapper(cuda.mark(_linear(seed).half(), 0), "cuda:0") for seed in range(2)]
    first = _served_apart(made, "cpu", instance=0)
    assert [f._model.weight.device.type for f in first] == ["cpu", "meta"]
    second = _served_apart(made, "cpu", instance=1)
    assert [f._model.weight.device.type for f in second] == ["meta", "cpu"]


def test_a_tensor_two_callables_hold_loads_in_both(cuda):
    shared = cuda.mark(_linear(0))
    callables = [Wrapper(shared, "cuda"), Wrapper(torch.nn.Sequential(shared), "cuda")]
    for instance in (0, 1):
        served = _served_apart(callables, "cpu", instance)
        assert served[0]._model.weight.device.type == "cpu"
        assert served[1]._model[0].weight is served[0]._model.weight


def test_where_a_walk_stops_short_every_instance_loads_every_tensor(cuda, monkeypatch):
    pair = _pair(cuda)
    monkeypatch.setattr(devices, "LIMIT", 3)
    assert devices.owners([("infer_func[0]", pair[0]), ("infer_func[1]", pair[1])]) == {}
    assert _served_apart(pair, "cpu", instance=1)[0]._model.weight.device.type == "cpu"


# -- a stand-in instance: the runtime unpickles onto its device and serves its callable ------------------------------


def test_each_stand_in_instance_serves_its_callable_with_its_tensors_on_its_device(cuda, tmp_path, monkeypatch):
    repo = Repository()
    repo.bind("Linear", infer_func=_pair(cuda), inputs=X, outputs=Y, config=BATCHED)
    built = build_repository(
        repo, tmp_path / "repo", roots=(str(Path(__file__).parent),), packages=PackageOptions(mode="record")
    )
    spec = built.spec.model("Linear")
    # KIND_GPU's device: "meta" stands for cuda:<id>, which torch's CPU build cannot make
    monkeypatch.setattr(
        TritonContext, "device_of", staticmethod(lambda args: "meta" if args["model_instance_kind"] == "GPU" else "cpu")
    )
    monkeypatch.setattr(runtime_devices, "use_device", lambda device, imports=(): None)
    loads = []

    def loading_on(*args):
        loads.append(args)
        return runtime_payload.loading_on(*args)

    monkeypatch.setattr(triton_model, "loading_on", loading_on)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    served = {}
    for group, kind in (("Linear_0", "GPU"), ("Linear_1", "CPU")):
        args = initialize_args(spec, "Linear", tmp_path / "repo" / "Linear")
        args.update(model_instance_name=f"{group}_0", model_instance_kind=kind)
        model = TritonPythonModel()
        model.initialize(args)
        served[kind] = model.infer_func
    assert served["GPU"]._device == "cuda" and served["GPU"]._model.weight.device.type == "meta"
    assert served["CPU"]._device == "cpu" and served["CPU"]._model.weight.device.type == "cpu"
    assert rebuilt_tensors.loading_device() == "cpu"  # reset once the payload is loaded
    assert loads == [("meta", "Linear", 0), ("cpu", "Linear", 1)]  # each instance's device and index
    with runtime_payload.loading_on("cpu", "Linear", 1):  # what the CPU instance unpickled: no GPU model weights
        _, payload = load_payload(str(tmp_path / "repo" / "Linear" / "1"), "Linear")
    assert [f._model.weight.device.type for f in payload["infer_funcs"]] == ["meta", "cpu"]
    (response,) = model.execute([request(x=x)])
    expected = _linear(1)(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(response.output_tensors()[0].as_numpy(), expected, rtol=1e-6)
