"""Frozen dataclasses that every emitter reads; built only by ``repogen.ir.lower``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..dsl.site import Site
from ..triton.server_options import ServerSettings


@dataclasses.dataclass(frozen=True)
class IOSpec:
    """One input or output of a model or ensemble, as its ``config.pbtxt`` declares it (Triton's
    ``ModelInput``/``ModelOutput``). The runtime's ``TensorSpec`` is PyTriton's view of the same declaration,
    which a served callable reads from ``triton_context``."""

    name: str
    data_type: str  # Triton's enum name, e.g. "TYPE_FP32"
    dims: tuple[int, ...]
    optional: bool = False
    labels: tuple[str, ...] | None = None  # classification labels of an output
    reshape: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class PlacementSpec:
    """Where a model's tensors live: what its callable takes, and where Triton may leave its inputs.

    ``tensors`` is ``numpy`` (arrays in host memory) or the framework module whose tensors the callable
    takes on its instance's device (``torch``, ``cupy``, an array-API module). ``inputs_anywhere`` is
    python_backend's FORCE_CPU_ONLY_INPUT_TENSORS "no": inputs stay where they were made, a GPU included,
    instead of being copied into host memory first.
    """

    tensors: str = "numpy"
    inputs_anywhere: bool = False
    output_memory: str | None = None
    """Where a GPU instance's GPU outputs go: ``host`` (copied once a batch, for network readers) or ``gpu`` (left
    there, for readers on a GPU). ``ModelConfig(output_memory=...)`` as the user gave it, None where the build decides,
    until ``ir.placement.settle_transfers`` settles it (None, read as ``host``, where it never runs)."""
    inputs_given: bool = False
    """Whether the user set FORCE_CPU_ONLY_INPUT_TENSORS: the build then leaves it as it is."""

    @property
    def numpy_on_cpu(self) -> bool:
        """numpy arrays in, from host memory only: what the generated straight-line ``execute`` reads."""
        return self.tensors == "numpy" and not self.inputs_anywhere


@dataclasses.dataclass(frozen=True)
class QueuePolicySpec:
    timeout_action: str  # "REJECT" or "DELAY"
    default_timeout_microseconds: int
    allow_timeout_override: bool
    max_queue_size: int


@dataclasses.dataclass(frozen=True)
class DynamicBatchingSpec:
    max_queue_delay_microseconds: int
    preferred_batch_size: tuple[int, ...]
    preserve_ordering: bool
    priority_levels: int
    default_priority_level: int
    default_queue_policy: QueuePolicySpec | None
    priority_queue_policy: tuple[tuple[int, QueuePolicySpec], ...]


@dataclasses.dataclass(frozen=True)
class SequenceControlSpec:
    name: str  # the input tensor carrying the control
    kind: str  # Triton's Control.Kind name, e.g. "CONTROL_SEQUENCE_START"
    data_type: str = ""  # CORRID only


@dataclasses.dataclass(frozen=True)
class SequenceBatchingSpec:
    max_sequence_idle_microseconds: int
    controls: tuple[SequenceControlSpec, ...]
    strategy: str  # "direct" or "oldest"
    max_queue_delay_microseconds: int
    max_candidate_sequences: int
    preferred_batch_size: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class RateLimiterSpec:
    resources: tuple[tuple[str, bool, int], ...]  # (name, global, count), sorted
    priority: int


@dataclasses.dataclass(frozen=True)
class WarmupSpec:
    name: str
    batch_size: int
    count: int
    inputs: tuple[tuple[str, str, tuple[int, ...], str], ...]  # (name, data type, dims, "zero" or "random")


@dataclasses.dataclass(frozen=True)
class InstanceGroupSpec:
    name: str
    kind: str  # "KIND_CPU" or "KIND_GPU"
    count: int
    gpus: tuple[int, ...]
    rate_limiter: RateLimiterSpec | None = None

    @property
    def instances(self) -> int:
        return self.count * max(1, len(self.gpus))


@dataclasses.dataclass(frozen=True)
class MadeOnGpu:
    """A bound callable holding CUDA tensors at build time (a model moved to ``"cuda"`` before ``bind``), and where
    its instances run (``ir/gpu_instances.py``); also, where the build chose the groups, a callable beside it holding
    none."""

    callable: str  # ``infer_func``, ``infer_func[1]``
    at: str  # the chain to the first CUDA tensor: ``infer_func -> method self -> attribute '_model' -> parameter ...``
    devices: tuple[int, ...]  # the GPUs the build made them on; () for a callable holding none
    runs: str  # what the build decided, as the CLI says it

    def message(self, model: str) -> str:
        if not self.devices:
            return f"model '{model}': {self.callable} {self.runs}"
        made = " and ".join(f"cuda:{index}" for index in self.devices)
        return f"model '{model}': {self.callable} holds CUDA tensors (made on {made}, at {self.at}): {self.runs}"


@dataclasses.dataclass(frozen=True)
class ClientSpec:
    """A model handle a version's callables hold: it travels as a BLS client of the model it names."""

    reference: Any  # the handle object, matched by identity when the callables are pickled
    model: str
    input_types: tuple[tuple[str, str], ...]  # (input name, Triton data type) of the called model
    outputs: tuple[str, ...]
    decoupled: bool
    requested: tuple[str, ...] | None  # handle.outputs(...): the outputs asked for, None for all
    memory: str | None = None  # Triton's preferred memory for the outputs: "cpu", "gpu", None (where made)
    tensors: str = "numpy"  # what the calling model takes: its outputs come back as such
    options: Any = None  # the handle's CallOptions (version, parameters, timeout, sequence); None: none set


Policy = tuple[str, tuple[int, ...]]
"""A version policy: ("latest" | "all" | "specific", numbers)."""


@dataclasses.dataclass(frozen=True)
class VersionSpec:
    version: int
    infer_funcs: tuple[Any, ...]  # one callable per model instance
    clients: tuple[ClientSpec, ...] = ()
    # (name in the version directory, source path): a network the callables open (model.onnx)
    files: tuple[tuple[str, Path], ...] = ()
    # modules the callables import at run time that pickling cannot see (onnxruntime): shipped, recorded
    imports: tuple[str, ...] = ()

    @property
    def calls(self) -> tuple[str, ...]:
        """The models the callables call through BLS, sorted."""
        return tuple(sorted({c.model for c in self.clients}))


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    inputs: tuple[IOSpec, ...]
    outputs: tuple[IOSpec, ...]
    max_batch_size: int
    # One field for Triton's `scheduling_choice` oneof, so two schedulers cannot be set at once.
    scheduler: DynamicBatchingSpec | SequenceBatchingSpec | None
    instance_groups: tuple[InstanceGroupSpec, ...]
    version_policy: Policy | None
    response_cache: bool
    decoupled: bool
    strict: bool
    parameters: tuple[tuple[str, str], ...]
    versions: tuple[VersionSpec, ...]
    files: tuple[tuple[str, Path], ...] = ()  # (name under <version>/files/, source path)
    warmup: tuple[WarmupSpec, ...] = ()
    placement: PlacementSpec = PlacementSpec()
    made_on_gpu: tuple[MadeOnGpu, ...] = ()
    """Callables holding CUDA tensors at build time, and where the build put their instances
    (``ir/gpu_instances.py``)."""
    max_concurrency: int | None = None
    """Requests an instance of an async callable has in flight at once (``ir/concurrency.py``); None: no callable is
    async; 0: one at a time (a sequence model's)."""

    @property
    def on_gpu(self) -> bool:
        """Whether some instance of the model runs on a GPU (a KIND_GPU group)."""
        return any(group.kind == "KIND_GPU" for group in self.instance_groups)


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """An exported network Triton serves with a backend of its own (``backend: "onnxruntime"``, a platform).

    ``model`` carries the config (its versions hold no callables); ``graphs`` the file each version
    ships, written as ``<name>/<version>/<filename>``.
    """

    model: ModelSpec
    backend: str  # "onnxruntime"; "" where the platform names it
    filename: str
    graphs: tuple[tuple[int, Path], ...]  # (version, source path), sorted by version
    platform: str = ""  # "pytorch_libtorch", "tensorrt_plan"
    external: tuple[tuple[int, str, Path], ...] = ()  # an ONNX graph's data files: (version, location, source)

    @property
    def name(self) -> str:
        return self.model.name


@dataclasses.dataclass(frozen=True)
class IncludedSpec:
    """An existing model directory (``models.include``): copied as it is; its config's tensors are its interface."""

    name: str
    source: Path
    files: tuple[tuple[str, Path], ...]  # (POSIX path under the model directory, source), sorted
    inputs: tuple[IOSpec, ...]
    outputs: tuple[IOSpec, ...]
    max_batch_size: int
    decoupled: bool
    fields: tuple[str, ...]  # every config field it sets (Triton's full names), for the targets' check
    runs_on: str  # its backend or platform, for messages


@dataclasses.dataclass(frozen=True)
class StepSpec:
    model: str
    input_map: tuple[tuple[str, str], ...]  # (composing model's input, ensemble tensor), sorted
    output_map: tuple[tuple[str, str], ...]  # (composing model's output, ensemble tensor), sorted


@dataclasses.dataclass(frozen=True)
class EnsembleSpec:
    name: str
    inputs: tuple[IOSpec, ...]
    outputs: tuple[IOSpec, ...]
    max_batch_size: int
    steps: tuple[StepSpec, ...]  # in the order the body called them (a topological order)


@dataclasses.dataclass(frozen=True)
class FusedSpec:
    """A fused ensemble (``fuse=True``): the Python model Triton serves, and the steps it runs in-process."""

    model: ModelSpec  # what config.pbtxt says: the ensemble's interface, the ensemble config's scheduling
    steps: tuple[StepSpec, ...]  # in dependency order (the order the @ensemble body called them)
    step_models: tuple[ModelSpec, ...]  # the composing models, one per step

    @property
    def name(self) -> str:
        return self.model.name


@dataclasses.dataclass(frozen=True)
class RepositorySpec:
    models: tuple[ModelSpec, ...]  # sorted by name
    ensembles: tuple[EnsembleSpec, ...] = ()  # sorted by name; fused ones too (their steps run in-process)
    fused: tuple[FusedSpec, ...] = ()  # each fused ensemble, sorted by name
    networks: tuple[NetworkSpec, ...] = ()  # exported networks on their own backends, sorted by name
    included: tuple[IncludedSpec, ...] = ()  # model directories taken in as they are, sorted by name
    declared_policies: tuple[tuple[str, Policy | None], ...] = ()
    """``--model-version N``: each model's declared version policy, bound to the versions present once N is merged
    into the repository (``versions.merged_versions``); its models' own ``version_policy`` is None until then."""
    sites: tuple[tuple[str, Site], ...] = dataclasses.field(default=(), compare=False)
    """Where each model was declared (``app.py:12``), for the errors emitting it may raise."""
    server: ServerSettings = ServerSettings()
    """What the server must be started with beyond the configs (``ServerOptions``); recorded in the manifest."""

    def site(self, name: str) -> Site | None:
        return dict(self.sites).get(name)

    def model(self, name: str) -> ModelSpec:
        for spec in self.models:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def ensemble(self, name: str) -> EnsembleSpec:
        for spec in self.ensembles:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def fused_spec(self, name: str) -> FusedSpec | None:
        """The FusedSpec of ensemble ``name``, or None when Triton schedules its steps."""
        return next((f for f in self.fused if f.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        named = [m.name for m in self.models] + [e.name for e in self.ensembles] + [n.name for n in self.networks]
        named += [i.name for i in self.included]
        return tuple(sorted(named))
