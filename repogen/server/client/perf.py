"""``repogen perf MODEL``: perf_analyzer with its inputs written from the model's metadata.

perf_analyzer needs a value and a concrete shape for every input; Triton's own answer is a JSON file
(``--input-data``). It is written here from the model's metadata: the user's ``--input`` values (typed
as ``repogen infer`` types them), else a harmless value per datatype with every ``-1`` dimension 1 (or
``--shape``). A batching model's data holds one sample (perf_analyzer adds the batch dimension, ``-b``);
a decoupled model is measured over a gRPC stream (``--streaming``). perf_analyzer itself comes from
PyPI on first use (:mod:`repogen.server.provision.perf_analyzer`), as ``serve`` installs the server.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import UsageError
from .access_key import ENV as ACCESS_ENV
from .access_key import find_token, headers, refusal_error, refused
from .infer import DEFAULT_URLS, ModelClient, is_decoupled, prepare
from .values import InferError, sample_value

__all__ = ["PerfOptions", "input_data", "parse_shapes", "perf_command", "run_perf"]

Echo = Callable[[str], None]


@dataclass(frozen=True)
class PerfOptions:
    model: str
    inputs: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    """``NAME:D1,D2`` for an input's dimensions (without the batch dimension), as perf_analyzer's ``--shape``."""
    url: str | None = None
    protocol: str | None = None
    concurrency: str = "1"
    batch_size: int = 1
    measurement_interval_ms: int = 1000
    extra: tuple[str, ...] = field(default=())
    token: str | None = None
    """The server's access key (else found as ``repogen infer`` finds it): perf_analyzer sends it (``-H``)."""


def parse_shapes(shapes: tuple[str, ...]) -> dict[str, list[int]]:
    parsed = {}
    for text in shapes:
        name, sep, dims = text.partition(":")
        try:
            values = [int(d) for d in dims.split(",")] if sep and name else []
        except ValueError:
            values = []
        if not values or min(values) < 1:
            raise UsageError(f"--shape {text!r} is not NAME:D1,D2,...; expected e.g. --shape a:16 or --shape x:3,224.")
        parsed[name] = values
    return parsed


def _content(array: np.ndarray) -> list[Any]:
    flat = array.reshape(-1).tolist()
    return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in flat]


def input_data(
    metadata: dict[str, Any], arrays: dict[str, tuple[str, np.ndarray]], shapes: dict[str, list[int]]
) -> tuple[dict[str, Any], list[str]]:
    """perf_analyzer's ``--input-data`` JSON (one sample) and the ``--shape`` arguments it needs."""
    config = metadata["config"]
    batching = int(config.get("max_batch_size", 0)) > 0
    optional = {i["name"] for i in config.get("input", []) if i.get("optional")}
    model = metadata.get("name", "?")
    unknown = sorted(set(shapes) - {t["name"] for t in metadata.get("inputs", [])})
    if unknown:
        raise InferError(f"--shape {', '.join(unknown)}: model {model!r} has no such input.")
    sample, shape_args = {}, []
    for spec in metadata.get("inputs", []):
        name, datatype = spec["name"], spec["datatype"]
        dims = [int(d) for d in spec["shape"]][1 if batching else 0 :]
        if name in arrays:
            array = arrays[name][1]
            if batching:
                if array.shape[0] != 1:
                    raise InferError(
                        f"--input {name}: perf sends one sample per batch element, found a batch of {array.shape[0]}; "
                        "pass one sample and --batch-size N."
                    )
                array = array[0]
        elif name in optional and name not in shapes:
            continue
        else:
            wanted = shapes.get(name) or [1 if d < 0 else d for d in dims]
            if len(wanted) != len(dims) or any(d >= 0 and d != w for d, w in zip(dims, wanted, strict=False)):
                raise InferError(f"--shape {name}: model {model!r} declares {dims} (-1: any size), found {wanted}.")
            array = np.full(math.prod(wanted), sample_value(datatype), dtype=object).reshape(wanted)
        sample[name] = {"content": _content(array), "shape": list(array.shape)}
        if any(d < 0 for d in dims):
            shape_args.append(f"--shape={name}:{','.join(str(d) for d in array.shape)}")
    return {"data": [sample]}, shape_args


def perf_command(
    binary: Path,
    options: PerfOptions,
    protocol: str,
    url: str,
    data_file: Path,
    shape_args: list[str],
    streaming: bool,
    token: str | None = None,
) -> list[str]:
    """perf_analyzer's command line; ``token``: the access key, sent with every request it makes (``-H``),
    server-side statistics included, which the default restriction keeps behind the key."""
    return [
        str(binary), "-m", options.model, "-u", url, "-i", protocol,
        "--concurrency-range", options.concurrency, "--measurement-interval", str(options.measurement_interval_ms),
        "--input-data", str(data_file), *shape_args, "-b", str(options.batch_size),
        *(["--streaming"] if streaming else []), *(a for h in header_values(token, protocol) for a in ("-H", h)),
        *options.extra,
    ]  # fmt: skip


def header_values(token: str | None, protocol: str) -> list[str]:
    """perf_analyzer's ``-H`` values (``header:value``, split at the first ``:``) carrying the key."""
    return [f"{name}:{value}" for name, value in headers(token, protocol).items()]


def run_perf(options: PerfOptions, workdir: Path, echo: Echo) -> None:
    """Check the inputs against the running model, install perf_analyzer if needed, run it and print its report."""
    from ..provision.install import default_cache_dir
    from ..provision.perf_analyzer import MARKER, VERSION, ensure_perf_analyzer

    protocol = options.protocol or "http"
    with ModelClient(protocol, options.url, options.token) as client:
        metadata = prepare(client, options.model, list(options.inputs), require_all=False)
        url, token = client.url, client.token
    streaming = is_decoupled(metadata)
    if streaming and protocol != "grpc":  # perf_analyzer streams over gRPC only
        if options.protocol == "http" or options.url:
            raise InferError(
                f"model {options.model!r} is decoupled: perf_analyzer measures it over a gRPC stream only. Pass "
                "--protocol grpc and the gRPC address as --url HOST:PORT."
            )
        protocol, url = "grpc", DEFAULT_URLS["grpc"]
        token = find_token(options.token, url)[0]
    batching = int(metadata["config"].get("max_batch_size", 0)) > 0
    if options.batch_size != 1 and not batching:
        raise InferError(
            f"--batch-size {options.batch_size}: model {options.model!r} does not batch (max_batch_size 0)."
        )
    data, shape_args = input_data(metadata, metadata["arrays"], parse_shapes(options.shapes))
    data_file = workdir / "input-data.json"
    data_file.write_text(json.dumps(data))
    cache = default_cache_dir()
    if not (cache / f"perf-analyzer-{VERSION}" / MARKER).is_file():
        echo(
            f"First use of perf_analyzer: installing it into {cache} from PyPI's tritonclient=={VERSION} wheel and "
            "nvidia-cuda-runtime-cu12 (~13 MB, sha256-checked; no GPU needed)."
        )
    perf = ensure_perf_analyzer(cache)
    cmd = perf_command(perf.binary, options, protocol, url, data_file, shape_args, streaming, token)
    echo(f"perf_analyzer {'(streaming) ' if streaming else ''}on {options.model} at {url} over {protocol}:")
    proc = subprocess.Popen(cmd, env=perf.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: deque[str] = deque(maxlen=15)
    for line in proc.stdout:
        echo(line.rstrip("\n"))
        tail.append(line.rstrip("\n"))
    if proc.wait() != 0:
        shown = " ".join(cmd).replace(token, "$" + ACCESS_ENV) if token else " ".join(cmd)
        said = [line.strip() for line in tail if line.strip()]
        hint = "Fix what it names, or run the command above yourself."
        if any("stable measurement" in line for line in said):
            hint = (
                "The machine is too noisy for its default 10% stability: pass a longer --measurement-interval, "
                "or -- --stability-percentage=50."
            )
        elif any(refused(line) for line in said):
            hint = refusal_error(url, find_token(options.token, url)[1], "perf_analyzer's requests were refused")
        raise InferError(
            f"perf_analyzer exited with code {proc.returncode} measuring {options.model!r} (its output is above): "
            f"{said[-1] if said else 'no output'}\n{hint}\ncommand: {shown}"
        )
