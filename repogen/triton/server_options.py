"""The tritonserver options a repository's models depend on, read from their configs: one home for which config
field needs which flag, for the build (which records them in the manifest), ``repogen inspect``, ``repogen serve``,
``Triton.run`` and every file ``repogen deploy`` writes.

* ``response_cache.enable``: ``--cache-config=local,size=N``. Triton caches only in a server started with a cache
  (docs/user_guide/response_cache.md); without one the model is served uncached and nothing says so. ``N`` is the
  repository's (``ServerOptions(response_cache_byte_size=...)``, or ``TritonConfig(cache_config=...)``), else
  :data:`DEFAULT_CACHE_BYTES`.
* ``instance_group[].rate_limiter``: ``--rate-limit=execution_count`` (its default is ``off``, which ignores every
  resource); and ``--rate-limit-resource=NAME:COUNT`` for each resource the repository gives a count. Without one
  Triton makes available, per device, the most any instance asks for. With one, a resource left out counts 0 and
  its models fail to load, so all are listed; the server lower-cases the names it reads there
  (src/command_line_parser.cc), while a config's are matched as written (core's rate_limiter.cc).
* KIND_GPU models whose tensors outgrow the CUDA pool: ``--cuda-memory-pool-byte-size`` (repogen.triton.gpus).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import text_format

from ..runtime.contract import CONFIG_FILE, Manifest, element_bytes
from ..runtime.contract.tritonserver_flags import CACHE_FLAG, POOL_FLAG, RATE_LIMIT_FLAG, RATE_LIMIT_MODE, RESOURCE_FLAG
from .gpus import cuda_pool_args
from .proto import model_config_pb2 as mc

__all__ = [
    "CACHE_FLAG", "DEFAULT_CACHE_BYTES", "POOL_FLAG", "RATE_LIMIT_FLAG", "RESOURCE_FLAG", "ServerOption",
    "ServerSettings", "gpu_batch_bytes", "gpu_groups", "gpus_needed", "resource_needs", "server_options",
    "server_record", "trace_args", "DEFAULT_TRACE_RATE", "TRACE_FLAG",
]  # fmt: skip

DEFAULT_CACHE_BYTES = 64 << 20
"""The response cache's size where the repository gives none: Triton's local cache needs one."""


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """What a repository says of its server beyond its configs: the cache's size, the resources' counts."""

    response_cache_byte_size: int | None = None
    rate_limit_resources: tuple[tuple[str, int], ...] = ()

    def record(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.response_cache_byte_size is not None:
            found["response_cache_byte_size"] = self.response_cache_byte_size
        if self.rate_limit_resources:
            found["rate_limit_resources"] = dict(self.rate_limit_resources)
        return found

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> ServerSettings:
        """The settings a manifest recorded (none for a hand-written repository, or values it cannot read)."""
        record = record if isinstance(record, Mapping) else {}
        size = record.get("response_cache_byte_size")
        resources = record.get("rate_limit_resources")
        pairs = sorted((str(k), int(v)) for k, v in resources.items()) if isinstance(resources, Mapping) else []
        return cls(size if isinstance(size, int) and size > 0 else None, tuple(pairs))


@dataclasses.dataclass(frozen=True)
class ServerOption:
    """One tritonserver option the repository's models depend on: the flag, its value, who needs it and why."""

    flag: str
    value: str
    models: tuple[str, ...]
    why: str

    @property
    def arg(self) -> str:
        return f"{self.flag}={self.value}"

    def record(self) -> dict[str, Any]:
        return {"flag": self.flag, "value": self.value, "models": list(self.models), "why": self.why}


def server_options(configs: Mapping[str, mc.ModelConfig], settings: ServerSettings) -> list[ServerOption]:
    """What a server needs to serve ``configs`` (model name -> config) as they say, in a fixed order."""
    options = []
    cached = sorted(name for name, config in configs.items() if config.response_cache.enable)
    if cached:
        size = settings.response_cache_byte_size or DEFAULT_CACHE_BYTES
        options.append(ServerOption(CACHE_FLAG, f"local,size={size}", tuple(cached), _CACHE_WHY))
    limited = sorted(name for name, config in configs.items() if any(g.HasField("rate_limiter") for g in
                     config.instance_group))  # fmt: skip
    if limited:
        options.append(ServerOption(RATE_LIMIT_FLAG, RATE_LIMIT_MODE, tuple(limited), _RATE_WHY))
    counts = dict(settings.rate_limit_resources)
    for name, needs in sorted(resource_needs(configs).items()) if counts else ():
        most = max(needs.values())
        why = f"{_RESOURCE_WHY} (the most one instance asks for is {most})"
        options.append(ServerOption(RESOURCE_FLAG, f"{name}:{counts.get(name, most)}", tuple(sorted(needs)), why))
    on_gpu = sorted(name for name, config in configs.items() if gpu_groups(config))
    batch_bytes = sum(gpu_batch_bytes(configs[name]) or 0 for name in on_gpu)
    for arg in cuda_pool_args(batch_bytes, max((gpus_needed(configs[name]) for name in on_gpu), default=0)):
        options.append(ServerOption(POOL_FLAG, arg.split("=", 1)[1], tuple(on_gpu), _POOL_WHY))
    return options


def gpu_groups(config: mc.ModelConfig) -> list[mc.ModelInstanceGroup]:
    return [g for g in config.instance_group if g.kind == mc.ModelInstanceGroup.KIND_GPU]


def gpus_needed(config: mc.ModelConfig) -> int:
    """GPUs a server must see to load this model: past the highest id a KIND_GPU group names, else one."""
    return max((max(g.gpus, default=-1) + 1 or 1 for g in gpu_groups(config)), default=0)


def gpu_batch_bytes(config: mc.ModelConfig) -> int | None:
    """Bytes of a full batch's inputs and outputs (max_batch_size rows) of a KIND_GPU model, which pass through
    Triton's CUDA memory pool when they live on a GPU; None where a -1 dim or BYTES leaves it open (or no GPU)."""
    groups = gpu_groups(config)
    if not groups:
        return None
    rows = max(config.max_batch_size, 1)
    total = 0
    for tensor in [*config.input, *config.output]:
        size = element_bytes(mc.DataType.Name(tensor.data_type))
        if size is None or any(d < 0 for d in tensor.dims):
            return None
        total += rows * size * math.prod(tensor.dims)
    return total * sum(group.count or 1 for group in groups)


TRACE_FLAG = "--trace-config"
DEFAULT_TRACE_RATE = 1000
"""tritonserver's: one request of every 1000 is traced."""


def trace_args(endpoint: str, rate: int = DEFAULT_TRACE_RATE) -> list[str]:
    """tritonserver's arguments tracing one request of every ``rate`` with OpenTelemetry, exported over OTLP/HTTP to
    ``endpoint`` (``http://collector:4318/v1/traces``), with each request's timestamps; a ValueError naming what is
    wrong with either."""
    if not endpoint.startswith(("http://", "https://")) or "," in endpoint or " " in endpoint:
        raise ValueError(
            f"trace endpoint {endpoint!r}: expected the http(s) URL of an OTLP/HTTP receiver, e.g. "
            "http://127.0.0.1:4318/v1/traces (tritonserver exports its spans there, and the models their own)"
        )
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise ValueError(f"trace rate {rate!r}: expected a whole number >= 1 (1: every request; N: one in N)")
    return [
        f"{TRACE_FLAG}=mode=opentelemetry", f"{TRACE_FLAG}=rate={rate}", f"{TRACE_FLAG}=level=TIMESTAMPS",
        f"{TRACE_FLAG}=opentelemetry,url={endpoint}",
    ]  # fmt: skip


def server_record(settings: ServerSettings, records: Mapping[str, bytes]) -> dict[str, Any]:
    """The manifest's record of the server options the models depend on, from the configs among ``records``
    (repository-relative path -> bytes): nothing where they need nothing and the repository says nothing."""
    configs = {}
    for path, data in records.items():
        name, _, rest = path.partition("/")
        if rest == CONFIG_FILE:
            configs[name] = text_format.Parse(data.decode("utf-8"), mc.ModelConfig())
    options = server_options(configs, settings)
    if not options and not settings.record():
        return {}
    return {Manifest.SERVER: {"options": [o.record() for o in options], "settings": settings.record()}}


def resource_needs(configs: Mapping[str, mc.ModelConfig]) -> dict[str, dict[str, int]]:
    """Rate limiter resource name -> {model: the most one of its instances asks for}."""
    found: dict[str, dict[str, int]] = {}
    for name, config in configs.items():
        for group in config.instance_group:
            for resource in group.rate_limiter.resources:
                users = found.setdefault(resource.name, {})
                users[name] = max(users.get(name, 0), resource.count)
    return found


_CACHE_WHY = "their configs enable the response cache, which caches nothing in a server started without a cache"
_RATE_WHY = "their instances declare rate limiter resources, which a server schedules by only with the rate limiter on"
_RESOURCE_WHY = "the count of this resource the repository gives its server"
_POOL_WHY = (
    "their KIND_GPU instances' full batches, twice over, outgrow tritonserver's default 64 MB CUDA memory pool "
    "(past it, every GPU tensor takes its own CUDA IPC handle)"
)
