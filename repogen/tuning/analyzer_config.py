"""What Model Analyzer is told: one YAML config naming the embedded server, its environment and inputs.

Model Analyzer launches tritonserver itself (local mode) and runs perf_analyzer against each config
variant it writes. Three things a user otherwise finds by failing (measured on 2.51 + Python 3.10):
the server's environment (the stub's libpython and the numpy-only venv) must be in Model Analyzer's
own environment, since its first launch does not apply ``triton_server_environment``; perf_analyzer
inherits that same environment, so its libraries (libcudart, libb64) go on the one
``LD_LIBRARY_PATH``; and every input needs data with concrete shapes, written here from each model's
config as ``repogen perf`` writes them. Everything listens on 127.0.0.1, on ports picked free.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format

from ..errors import InferError, TuneError
from ..ondisk.reader import ModelDir, model_dirs, parse_config
from ..runtime.contract import Metadata
from ..server.client.access_key import Access
from ..server.client.perf import header_values, input_data
from ..server.provision.install import ServerInstall, VenvInfo
from ..server.provision.perf_analyzer import PerfAnalyzer
from ..server.running.external import help_restricts
from ..server.running.host import HOST
from ..server.running.process import TritonServer, free_ports
from ..triton.dtypes import wire_name
from ..triton.proto import model_config_pb2 as mc

__all__ = [
    "MODEL_ANALYZER_OPEN", "SearchBudget", "ServerLaunch", "TunePlan", "analyzer_access", "embedded_launch",
    "given_launch", "plan_tuning", "skipped",
]  # fmt: skip


@dataclass(frozen=True)
class SearchBudget:
    """How much Model Analyzer may try: the config space (brute search) and the load per config."""

    max_instances: int = 2
    max_batch_size: int = 8
    max_concurrency: int = 4
    mode: str = "brute"


@dataclass(frozen=True)
class ServerLaunch:
    """The tritonserver Model Analyzer starts: its binary, the flags it needs beyond ports and addresses, the
    environment it (and perf_analyzer, which inherits Model Analyzer's) runs with, and which protocols it can
    keep behind a key (:meth:`TritonServer.restricts`)."""

    binary: Path
    flags: dict[str, str]
    environment: dict[str, str]
    restricts: dict[str, bool] = field(default_factory=lambda: {"http": False, "grpc": False})


def embedded_launch(install: ServerInstall, venv: VenvInfo) -> ServerLaunch:
    """The embedded server as ``repogen serve`` runs it: the stub's libpython and the numpy-only venv."""
    server = TritonServer(Path("."), install, venv, log_path=os.devnull)  # never started: its environment only
    flags = {
        "backend-directory": str(install.backend_directory(venv.python_version)),
        "cache-directory": str(install.cache_directory),
    }
    return ServerLaunch(install.binary, flags, server.environment(), server.restricts())


def given_launch(binary: Path) -> ServerLaunch:
    """A tritonserver of the user's (``--tritonserver``, e.g. in an NGC container): its own backends and Python."""
    environment = dict(os.environ)
    return ServerLaunch(binary, {}, environment, help_restricts(binary, environment))


MODEL_ANALYZER_OPEN = ("health", "model-config", "model-repository")
"""What Model Analyzer's own client calls with no way to send a header (model_analyzer/triton/client: server and
model readiness, each variant's config, and its load and unload): these stay open on its server."""


def analyzer_access(access: Access | None) -> Access | None:
    """``access`` less what Model Analyzer needs open; perf_analyzer sends the key for the rest."""
    if access is None:
        return None
    return Access.choose(tuple(a for a in access.apis if a not in MODEL_ANALYZER_OPEN), access.token)


@dataclass(frozen=True)
class TunePlan:
    workdir: Path
    config_file: Path
    environment: dict[str, str]
    models: tuple[str, ...]
    variants: Path = field(init=False)
    reports: Path = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variants", self.workdir / "variants")
        object.__setattr__(self, "reports", self.workdir / "reports")


def _metadata(model: ModelDir) -> dict[str, Any]:
    """What ``repogen perf`` reads from a running server, read from the built config instead."""
    config, error = parse_config(model.path / "config.pbtxt")
    if config is None:
        raise TuneError(f"model {model.name!r}: {error}")
    as_dict = json_format.MessageToDict(config, preserving_proto_field_name=True)
    batch = [-1] if config.max_batch_size > 0 else []
    inputs = [
        {"name": i.name, "datatype": wire_name(mc.DataType.Name(i.data_type)), "shape": [*batch, *i.dims]}
        for i in config.input
    ]
    return {"name": model.name, "inputs": inputs, "config": as_dict}


def _choose(repository: Path, names: tuple[str, ...]) -> list[ModelDir]:
    found = {m.name: m for m in model_dirs(repository) if m.has_config}
    unknown = [n for n in names if n not in found]
    if unknown:
        raise TuneError(
            f"{repository} has no model {', '.join(map(repr, unknown))}; it has {', '.join(sorted(found))}. "
            "Pass --model with one of those."
        )
    for name in names:
        why = _untunable(found[name])
        if why:
            raise TuneError(f"model {name!r} {why}")
    chosen = [found[n] for n in names] if names else [m for m in found.values() if not _untunable(m)]
    if not chosen:
        raise TuneError(f"{repository} has no model Model Analyzer can tune on its own: {_WHY}")
    return chosen


_WHY = (
    "ensembles and BLS models depend on other models, which Model Analyzer does not load beside the one it "
    "measures, and decoupled models answer in streams its searches do not measure. Tune the models they call."
)


def skipped(repository: Path) -> list[tuple[str, str]]:
    """The models a default run leaves out, and why (printed, so nobody wonders)."""
    return [(m.name, why) for m in model_dirs(repository) if m.has_config and (why := _untunable(m))]


def _untunable(model: ModelDir) -> str | None:
    """Why Model Analyzer cannot measure ``model`` alone (None: it can)."""
    if model.is_ensemble:
        return "is an ensemble: tune its steps (Model Analyzer loads only the model it measures)."
    if model.config is not None and model.config.model_transaction_policy.decoupled:
        return "is decoupled: Model Analyzer's searches measure request/response models; use `repogen perf`."
    calls = [c for v in model.versions for c in model.metadata(v).get(Metadata.CALLS, [])]
    if calls:
        return (
            f"calls {', '.join(sorted(set(calls)))} through BLS, which Model Analyzer does not load beside it: "
            "tune those models."
        )
    return None


_PROTOCOL = "grpc"  # Model Analyzer's default client protocol, which its perf_analyzers use too


def _restriction_flags(access: Access | None, server: ServerLaunch) -> dict[str, str]:
    """tritonserver's restriction flags as Model Analyzer's ``triton_server_flags`` (names without ``--``)."""
    if access is None:
        return {}
    pairs = (arg.removeprefix("--").split("=", 1) for arg in access.server_args(**server.restricts))
    return {name: value for name, value in pairs}


def plan_tuning(
    repository: Path,
    workdir: Path,
    server: ServerLaunch,
    perf: PerfAnalyzer,
    budget: SearchBudget,
    names: tuple[str, ...] = (),
    shapes: dict[str, list[int]] | None = None,
    access: Access | None = None,
) -> TunePlan:
    """Write the inputs and Model Analyzer's config for ``repository`` under ``workdir``.

    ``access`` (:func:`analyzer_access`): the API groups its server keeps behind the key, which every
    perf_analyzer sends over gRPC (Model Analyzer's ``client_protocol``).
    """
    models = _choose(repository, names)
    http, grpc, metrics = free_ports(3)
    environment = perf.environment(server.environment)  # one LD_LIBRARY_PATH for server and perf_analyzer
    profile = {model.name: _profile(model, workdir, shapes or {}, access) for model in models}
    # Model Analyzer's server and the stubs name the repository on their command lines: seen through a link in
    # the run's directory, every process of the run names that directory, and is found by it (run.py).
    linked = workdir / "repository"
    linked.symlink_to(repository.resolve(), target_is_directory=True)
    config = {
        "model_repository": str(linked),
        "profile_models": profile,
        "triton_launch_mode": "local",
        "triton_server_path": str(server.binary),
        "triton_server_flags": {
            **server.flags,
            "http-address": HOST,
            "grpc-address": HOST,
            "metrics-address": HOST,
            **_restriction_flags(access, server),
        },
        "client_protocol": _PROTOCOL,
        "triton_server_environment": {
            k: environment[k] for k in ("LD_LIBRARY_PATH", "PATH", "VIRTUAL_ENV") if k in environment
        },
        "triton_http_endpoint": f"{HOST}:{http}",
        "triton_grpc_endpoint": f"{HOST}:{grpc}",
        "triton_metrics_url": f"http://{HOST}:{metrics}/metrics",
        "triton_output_path": str(workdir / "tritonserver.log"),
        "perf_analyzer_path": str(perf.binary),
        **_outputs(workdir),
        **_search(budget),
        "collect_cpu_metrics": True,
    }
    config_file = workdir / "model-analyzer.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=True))
    return TunePlan(workdir, config_file, environment, tuple(m.name for m in models))


def _profile(model: ModelDir, workdir: Path, shapes: dict[str, list[int]], access: Access | None) -> dict[str, Any]:
    """One model's entry: its inputs, written from its config to a file perf_analyzer reads, and the key it sends."""
    try:
        data, shape_args = input_data(_metadata(model), {}, shapes)
    except InferError as exc:
        raise TuneError(str(exc)) from None
    data_file = workdir / "inputs" / f"{model.name}.json"
    data_file.parent.mkdir(parents=True, exist_ok=True)
    data_file.write_text(json.dumps(data))
    flags: dict[str, Any] = {"input-data": str(data_file)}
    if shape_args:
        flags["shape"] = [a.removeprefix("--shape=") for a in shape_args]
    if access is not None:
        flags["http-header"] = header_values(access.token, _PROTOCOL)[0]
    return {"cpu_only": not model.uses_gpu, "perf_analyzer_flags": flags}


def _outputs(workdir: Path) -> dict[str, Any]:
    """Where Model Analyzer writes the variants it measures, its checkpoints and its reports: all in the run's."""
    return {
        "output_model_repository_path": str(workdir / "variants"),
        "override_output_model_repository": True,
        "checkpoint_directory": str(workdir / "checkpoints"),
        "export_path": str(workdir / "reports"),
    }


def _search(budget: SearchBudget) -> dict[str, Any]:
    return {
        "run_config_search_mode": budget.mode,
        "run_config_search_max_instance_count": budget.max_instances,
        "run_config_search_max_model_batch_size": budget.max_batch_size,
        "run_config_search_max_concurrency": budget.max_concurrency,
    }
