"""`repogen infer`, `repogen status` and `repogen perf` against one `repogen serve` of tests/apps/cli.

Values are refused rather than changed (1.5 for INT64, 300 for UINT8, a float64 .npy for FP32), an
input given twice is refused, outputs print in declared order, a decoupled model streams its responses
as they arrive, the address can come from $REPOGEN_URL, and perf_analyzer measures a batching and a
streaming model with inputs written from their metadata.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from serve_cli import ROOT, cli_env, repogen

from repogen.server.running.server_process import ServerProcess
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

VALID = ("-i", "n=2", "-i", "u=3", "-i", "x=[1.5,2]")


@pytest.fixture(scope="module")
def served(triton_install: TritonInstallation) -> Iterator[ServerProcess]:
    """tests/apps/cli served as `repogen serve` serves it (in this process: the commands under test run apart)."""
    with triton_install.serving(f"{ROOT / 'tests' / 'apps' / 'cli' / 'app.py'}:models") as serving:
        assert serving.server is not None and len(serving.status().models) == 3
        yield serving.server


def _infer(served: ServerProcess, *args: str, protocol: str = "http") -> tuple[int, str, str]:
    url = served.http_url if protocol == "http" else served.grpc_url
    result = repogen("infer", *args, "--url", url, "--protocol", protocol)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_outputs_in_declared_order_and_only_those_asked_for(served: ServerProcess, protocol: str) -> None:
    code, out, err = _infer(served, "Typed", *VALID, protocol=protocol)
    assert code == 0, err
    assert out.index("zeta  FP32  shape [1, 2]") < out.index("alpha  INT64  shape [1, 1]")  # as declared, not a-z
    assert "[[3., 4.]]" in out and "[[5]]" in out
    code, out, err = _infer(served, "Typed", *VALID, "--output-tensor", "alpha", "--json", protocol=protocol)
    assert code == 0, err
    assert [o["name"] for o in json.loads(out)["outputs"]] == ["alpha"]


# Each datatype's extremes, sent and read back as they are over HTTP (repogen's own client) and gRPC (tritonclient's).
EVERY_VALUE = {
    "bool": [True, False], "int8": [-128, 127], "int16": [-32768, 32767], "int32": [-(2**31), 2**31 - 1],
    "int64": [-(2**63), 2**63 - 1], "uint8": [0, 255], "uint16": [0, 65535], "uint32": [0, 2**32 - 1],
    "uint64": [0, 2**64 - 1], "fp16": [65504.0, -0.5], "fp32": [0.1, -3.4e38], "fp64": [0.1, 1e308],
    "bytes": ["", "\u00e9t\u00e9", "a b"],
}  # fmt: skip
ROUNDED = {"fp16": np.float16, "fp32": np.float32}  # the JSON value as the wire's float holds it


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_every_datatype_goes_and_comes_back_unchanged(served: ServerProcess, protocol: str) -> None:
    args = [arg for name, values in EVERY_VALUE.items() for arg in ("-i", f"in_{name}={json.dumps(values)}")]
    code, out, err = _infer(served, "Every", *args, "--json", protocol=protocol)
    assert code == 0, err
    outputs = {o["name"]: o for o in json.loads(out)["outputs"]}
    for name, values in EVERY_VALUE.items():
        expected = np.array(values, ROUNDED[name]).tolist() if name in ROUNDED else values
        assert outputs[f"out_{name}"]["data"] == expected, name
        assert outputs[f"out_{name}"]["shape"] == [len(values)]
    code, out, err = _infer(served, "Every", *args, protocol=protocol)  # the printed form reads the same arrays
    assert code == 0, err
    assert 'out_bytes  BYTES  shape [3]\n  ["", "\u00e9t\u00e9", "a b"]' in out
    assert "out_uint64  UINT64  shape [2]\n  [                   0, 18446744073709551615]" in out


def test_lossy_values_are_refused(served: ServerProcess, tmp_path: Path) -> None:
    cases = {
        ("-i", "n=1.5", "-i", "u=3", "-i", "x=1"): "input 'n' expects INT64 values, found 1.5, which is not a whole "
        "number; pass integers, e.g. n=1.",
        ("-i", "n=1", "-i", "u=300", "-i", "x=1"): "input 'u' expects UINT8 values, found 300, outside UINT8's range "
        "0..255.",
        ("-i", "n=1", "-i", "u=1", "-i", "x=1e39"): "input 'x' expects FP32 values, found 1e+39, too large for FP32",
        ("-i", "n=1", "-i", "u=1", "-i", "x=hello"): "input 'x' expects FP32 values, found 'hello'; pass numbers",
    }
    for args, message in cases.items():
        code, _, err = _infer(served, "Typed", *args)
        assert code == 1 and message in err, err
    wide = tmp_path / "wide.npy"
    np.save(wide, np.array([[1.5, 2.0]], dtype=np.float64))
    code, _, err = _infer(served, "Typed", "-i", "n=1", "-i", "u=1", "-i", f"x=@{wide}")
    assert code == 1
    assert "input 'x' is FP32 (float32), found a float64 array in its .npy file" in err
    assert "np.save(path, x.astype(np.float32))" in err
    exact = tmp_path / "exact.npy"
    np.save(exact, np.array([[1.5, 2.0]], dtype=np.float32))
    code, out, err = _infer(served, "Typed", "-i", "n=2.0", "-i", "u=1", "-i", f"x=@{exact}")  # 2.0 is whole
    assert code == 0 and "[[3., 4.]]" in out, err


def test_an_input_given_twice_is_refused(served: ServerProcess) -> None:
    code, _, err = _infer(served, "Typed", *VALID, "-i", "n=5")
    assert code == 2  # a usage error
    assert "input 'n' is given twice (--input n=2 and --input n=5); pass each input once" in err


def test_a_decoupled_model_streams_its_responses(served: ServerProcess) -> None:
    code, out, err = _infer(served, "Count", "--stream", "-i", "n=3", protocol="grpc")
    assert code == 0, err
    assert re.findall(r"^response (\d)$", out, flags=re.MULTILINE) == ["1", "2", "3"]
    assert out.index("[1]") < out.index("[2]") < out.index("[3]")
    assert out.rstrip().endswith("Count: 3 response(s), stream complete.")
    code, out, err = _infer(served, "Count", "--stream", "--json", "-i", "n=2", protocol="grpc")
    assert [json.loads(line)["outputs"][0]["data"] for line in out.splitlines()] == [[1], [2]]
    code, _, err = _infer(served, "Count", "-i", "n=2")
    assert code == 1 and "model 'Count' is decoupled" in err and "Add --stream" in err
    code, _, err = _infer(served, "Count", "--stream", "-i", "n=2", protocol="http")
    assert code == 2 and "--stream needs gRPC" in err
    result = repogen("infer", "Count", "--stream", "-i", "n=1", "-o", "i")
    assert result.returncode == 2 and "No such option '-o'" in result.stderr  # -o means a directory elsewhere


def test_the_address_from_the_environment(served: ServerProcess) -> None:
    env = cli_env(REPOGEN_URL=served.grpc_url, REPOGEN_PROTOCOL="grpc")
    result = repogen("infer", "Typed", *VALID, env=env)
    assert result.returncode == 0 and "[[5]]" in result.stdout, result.stderr
    result = repogen("infer", "Typed", *VALID, env=cli_env(REPOGEN_URL="127.0.0.1:9"))
    assert result.returncode == 1 and "cannot reach a Triton server at 127.0.0.1:9" in result.stderr


def test_status_lists_states_and_requests(served: ServerProcess) -> None:
    assert _infer(served, "Typed", *VALID)[0] == 0
    result = repogen("status", "--url", served.http_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{served.http_url}: ready, 3 model(s)")
    typed = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["Typed"])
    assert typed.split()[1:3] == ["1", "READY"] and int(typed.split()[3]) >= 1
    rows = json.loads(repogen("status", "--url", served.grpc_url, "--protocol", "grpc", "--json").stdout)
    assert {r["name"]: r["state"] for r in rows} == {"Count": "READY", "Every": "READY", "Typed": "READY"}


# perf_analyzer stops at the first three windows within 100 % of each other, or fails after max-trials: on a loaded
# 2-core machine three short windows in a row can miss (CI once: "Failed to obtain stable measurement" at 3 trials)
STEADY = ("--measurement-interval", "500", "--", "--stability-percentage=100", "--max-trials=10")


def test_perf_measures_with_inputs_from_the_metadata(served: ServerProcess) -> None:
    result = repogen("perf", "Typed", "-b", "4", "--url", served.http_url, *STEADY, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"perf_analyzer on Typed at {served.http_url} over http:" in result.stdout
    assert "Batch size: 4" in result.stdout
    assert re.search(r"Concurrency: 1, throughput: [\d.]+ infer/sec", result.stdout)
    assert "compute infer" in result.stdout  # the server-side split perf_analyzer reports

    grpc = ("--url", served.grpc_url, "--protocol", "grpc")
    result = repogen("perf", "Count", "-i", "n=2", *grpc, *STEADY, timeout=300)  # a decoupled model: streamed
    assert result.returncode == 0, result.stdout + result.stderr
    assert "perf_analyzer (streaming) on Count" in result.stdout
    assert re.search(r"Concurrency: 1, throughput: [\d.]+ infer/sec", result.stdout)
    result = repogen("perf", "Count", "--url", served.http_url)
    assert result.returncode == 1 and "perf_analyzer measures it over a gRPC stream only" in result.stderr


def test_perf_installs_perf_analyzer_on_first_use(served: ServerProcess, tmp_path: Path) -> None:
    """An empty cache: perf_analyzer is installed (the pinned wheels already downloaded), then it measures."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "wheels").symlink_to(Path(cli_env()["REPOGEN_CACHE_DIR"]) / "wheels")
    result = repogen("perf", "Typed", "--url", served.http_url, *STEADY,
                     env=cli_env(REPOGEN_CACHE_DIR=str(cache)), timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "First use of perf_analyzer: installing it into" in result.stdout
    assert (cache / "perf-analyzer-2.41.0" / "bin" / "perf_analyzer").is_file()
    assert re.search(r"Concurrency: 1, throughput: [\d.]+ infer/sec", result.stdout)
