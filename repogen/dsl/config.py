"""Model configuration objects with PyTriton's names, fields and defaults."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class TimeoutAction(enum.Enum):
    """What the queue does with a request whose timeout expired."""

    REJECT = "REJECT"
    DELAY = "DELAY"


@dataclasses.dataclass(frozen=True)
class QueuePolicy:
    """Queue limits and timeouts of the dynamic batcher (PyTriton's ``QueuePolicy``)."""

    timeout_action: TimeoutAction = TimeoutAction.REJECT
    default_timeout_microseconds: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = 0


@dataclasses.dataclass(frozen=True)
class DynamicBatcher:
    """Triton's dynamic batcher settings (PyTriton's ``DynamicBatcher``)."""

    max_queue_delay_microseconds: int = 0
    preferred_batch_size: list[int] | tuple[int, ...] | None = None
    preserve_ordering: bool = False
    priority_levels: int = 0
    default_priority_level: int = 0
    default_queue_policy: QueuePolicy | None = None
    priority_queue_policy: dict[int, QueuePolicy] | None = None


@dataclasses.dataclass(frozen=True)
class SequenceBatcher:
    """Triton's sequence batcher, for stateful models: requests of one sequence reach one instance.

    The named control inputs (``None`` leaves one out) reach the callable as extra inputs:
    ``start``/``end``/``ready`` as int32 0/1 flags, ``correlation_id`` as uint64 (or BYTES with
    ``correlation_id_dtype=bytes``). ``strategy`` is ``"direct"`` (a batch slot per sequence) or
    ``"oldest"``.
    """

    max_sequence_idle_microseconds: int = 1_000_000
    start: str | None = "START"
    end: str | None = "END"
    ready: str | None = "READY"
    correlation_id: str | None = "CORRID"
    correlation_id_dtype: Any = "uint64"
    strategy: str = "direct"
    max_queue_delay_microseconds: int = 0
    max_candidate_sequences: int = 1
    preferred_batch_size: tuple[int, ...] | list[int] | None = None


@dataclasses.dataclass(frozen=True)
class RateLimiter:
    """Resources an instance must hold to execute (Triton's rate limiter, ``--rate-limit=execution_count``)."""

    resources: dict[str, int] | None = None
    global_resources: dict[str, int] | None = None
    priority: int = 0


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """What the tritonserver serving a repository must be started with, where its models' configs leave it open
    (``Repository(server_options=ServerOptions(...))``).

    The build records every option the models depend on (``repogen inspect`` lists them), and ``repogen serve``,
    ``Triton.run()`` and the files ``repogen deploy`` writes start the server with them: ``--cache-config`` for a
    ``ModelConfig(response_cache=True)``, ``--rate-limit=execution_count`` for instances with a
    :class:`RateLimiter`, a CUDA memory pool for large GPU batches.

    ``response_cache_byte_size``: the response cache's size (default 64 MiB). ``rate_limit_resources``: how many of
    each rate limiter resource the server has (``--rate-limit-resource=NAME:COUNT``); by default Triton makes
    available, per device, the most any one instance asks for, so instances needing one resource of count 1 run
    one at a time. Given, it lists every resource (the others get the most one instance asks for).
    """

    response_cache_byte_size: int | None = None
    rate_limit_resources: dict[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class Warmup:
    """Requests Triton sends before the model is READY, so first clients do not pay for lazy set-up.

    Every input gets ``data`` (``"zero"`` or ``"random"``) of its declared shape; ``shapes``
    gives the shape of inputs declared with -1.
    """

    name: str = "warmup"
    batch_size: int = 1
    count: int = 1
    data: str = "zero"
    shapes: dict[str, tuple[int, ...]] | None = None


@dataclasses.dataclass(frozen=True)
class WarmupInput:
    """PyTriton 0.7's: one input of a :class:`ModelWarmup` request, its dtype and shape (without the batch axis),
    filled with zeros (``zero_data``) or random values (``random_data``), the first of them set.
    ``input_data_file`` is refused by the build: the file would have to travel in the model's ``warmup/``."""

    dtype: Any
    shape: tuple[int, ...] | list[int]
    zero_data: bool | None = False
    random_data: bool | None = False
    input_data_file: str | None = None


@dataclasses.dataclass(frozen=True)
class ModelWarmup:
    """PyTriton 0.7's ``ModelWarmup`` (``ModelConfig(model_warmup=[...])``): ``count`` requests of ``batch_size`` rows,
    each input as its :class:`WarmupInput` says, which Triton sends every instance before the model is READY.
    :class:`Warmup` says the same with one kind of data for every input."""

    name: str
    batch_size: int
    inputs: dict[str, WarmupInput]
    count: int


@dataclasses.dataclass(frozen=True)
class InstanceGroup:
    """Where and how many instances run (Triton's ``instance_group``); each is its own stub process.

    ``kind`` is ``"KIND_CPU"`` or ``"KIND_GPU"`` (``"cpu"``/``"gpu"`` also accepted); ``gpus``
    lists device ids for GPU groups, and ``count`` instances run on each of them.
    """

    count: int = 1
    kind: str = "KIND_CPU"
    gpus: tuple[int, ...] | list[int] | None = None
    rate_limiter: RateLimiter | None = None


@dataclasses.dataclass(frozen=True)
class VersionPolicy:
    """Which of a model's versions Triton serves; build with ``latest``, ``all`` or ``specific``."""

    kind: str = "latest"
    versions: tuple[int, ...] = (1,)

    @classmethod
    def latest(cls, num_versions: int = 1) -> VersionPolicy:
        return cls("latest", (num_versions,))

    @classmethod
    def all(cls) -> VersionPolicy:
        return cls("all", ())

    @classmethod
    def specific(cls, *versions: int) -> VersionPolicy:
        return cls("specific", tuple(versions))


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """How Triton schedules a model (PyTriton's ``ModelConfig`` plus Triton-only extras).

    ``batching=False`` (or ``max_batch_size=0``) makes a model that sees each request's tensors
    exactly as sent, with no batch axis and no dynamic batcher. Without ``instance_groups`` a
    model gets one CPU instance per callable bound; with several versions bound and no
    ``version_policy``, all of them are served.

    ``tensors`` says what the callable takes: ``"numpy"`` arrays (PyTriton's contract, the default), or
    the tensors of a framework on the instance's device: ``"torch"``, ``"cupy"`` or the name of any
    module of the array API standard. Inputs a GPU already holds (an ensemble step's, a BLS caller's)
    then arrive without a copy and the others are moved there once; ``@batch`` and its kin merge and
    split them with the framework's own operations. Whatever ``tensors`` says, a callable may return numpy arrays or any
    framework's tensors, on the CPU or a GPU.

    ``output_memory`` says where a ``KIND_GPU`` instance's GPU outputs go: ``"host"`` copies each to host memory once
    a batch (readers over HTTP or gRPC), ``"gpu"`` leaves them on the GPU (readers there: CUDA shared-memory
    clients). Left None, the build decides from the repository: ``"gpu"`` where an ensemble step or a BLS caller
    that takes a framework's tensors on a GPU reads them, else ``"host"``.
    """

    batching: bool = True
    max_batch_size: int = 4
    batcher: DynamicBatcher | SequenceBatcher | None = dataclasses.field(default_factory=DynamicBatcher)
    response_cache: bool = False
    decoupled: bool = False
    parameters: dict[str, str] | None = None
    instance_groups: tuple[InstanceGroup, ...] | list[InstanceGroup] | None = None
    version_policy: VersionPolicy | None = None
    warmup: tuple[Warmup, ...] | list[Warmup] | None = None
    tensors: str = "numpy"
    output_memory: str | None = None
    model_warmup: tuple[ModelWarmup, ...] | list[ModelWarmup] | None = None
    """PyTriton 0.7's warmup requests (:class:`ModelWarmup`), sent before :attr:`warmup`'s."""
    max_concurrency: int | None = None
    """How many requests one instance of an ``async def`` callable (or async generator) has in flight at once; beyond
    it requests wait in Triton's queue. None: 64 for an async callable. Not in PyTriton (whose callables run one
    request at a time per instance); takes effect where python_backend lets responses leave after ``execute``
    returns (NGC 24.06 and later; 24.04 for a decoupled model), elsewhere an async callable serves one at a time."""
