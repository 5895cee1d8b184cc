"""One point measured with perf_analyzer, the load generator Triton users measure with.

perf_analyzer (tritonclient 2.41.0's binary, installed by ``repogen.server.provision.perf_analyzer``) runs
closed-loop at a fixed concurrency until three consecutive windows agree, then reports the
client's throughput and latency percentiles and the server's own breakdown per request (queue,
compute input, compute infer, compute output), which no Python client on the same cores can see.
"""

from __future__ import annotations

import csv
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from repogen.server.provision.perf_analyzer import PerfAnalyzer

# perf_analyzer's verbose CSV column -> our name (latencies and times in microseconds).
COLUMNS = {
    "Inferences/Second": "throughput",
    "Response Throughput": "response_throughput",  # a decoupled model's; its latencies are to the first response
    "p50 latency": "p50_us",
    "p90 latency": "p90_us",
    "p99 latency": "p99_us",
    "Avg latency": "avg_us",
    "Client Send": "client_send_us",
    "Network+Server Send/Recv": "network_us",
    "Server Queue": "queue_us",
    "Server Compute Input": "compute_input_us",
    "Server Compute Infer": "compute_infer_us",
    "Server Compute Output": "compute_output_us",
    "Client Recv": "client_recv_us",
}
# A shared 2-core machine rarely gives 3 windows within 10 %: accept a wider band, then retry wider.
STABILITY = (30, 100)


def measure(
    perf: PerfAnalyzer,
    model: str,
    url: str,
    protocol: str,
    shapes: dict[str, int],
    concurrency: int,
    window_s: float,
    input_data: str = "zero",
    streaming: bool = False,
    profile: Path | None = None,
) -> dict[str, Any]:
    """One perf_analyzer run; the figures of its last (stable) measurement.

    ``input_data``: perf_analyzer's ``--input-data`` (a JSON file for values that matter); ``streaming``: over a
    gRPC stream, which a decoupled model needs; ``profile``: where perf_analyzer writes every request's send
    and response timestamps (``--profile-export-file``).
    """
    failure = ""
    for stability in STABILITY:
        with tempfile.TemporaryDirectory(prefix="repogen-perf-") as tmp:
            report = Path(tmp) / "report.csv"
            command = [
                str(perf.binary), "-m", model, "-u", url, "-i", protocol,
                "--concurrency-range", str(concurrency), "--measurement-interval", str(int(window_s * 1000)),
                "--stability-percentage", str(stability), "--max-trials", "8", "--input-data", input_data,
                *(["--streaming"] if streaming else []),
                *(["--profile-export-file", str(profile)] if profile else []),
                *(arg for name, size in shapes.items() for arg in ("--shape", f"{name}:{size}")),
                "-f", str(report), "--verbose-csv",
            ]  # fmt: skip
            proc = subprocess.run(command, env=perf.environment(), capture_output=True, text=True, timeout=600)
            if proc.returncode == 0 and report.is_file():
                row = next(csv.DictReader(report.open()))
                figures = {ours: float(row[theirs]) for theirs, ours in COLUMNS.items() if theirs in row}
                return figures | {"stability_pct": stability}
            failure = (proc.stdout + proc.stderr).strip()[-1500:]
    raise RuntimeError(f"perf_analyzer failed for {model} ({protocol}, c={concurrency}):\n{failure}")
