"""Every request the `repogen serve` banner prints works as printed.

The banner used to write each input as one scalar (`x=1.0`), which `repogen infer` refuses for a
fixed-size `[-1, 3]` input. tests/apps/banner has a batched model with a fixed-size, a variable and a
BYTES input and an unbatched one with a `[2, 2]` and a variable BYTES input; the printed lines and the
same builders applied to every model are run through the CLI and sent over HTTP.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import tritonclient.http
from serve_cli import ServeProcess, repogen, serving

from repogen.server.running.banner import sample_curl, sample_infer
from repogen.testing.prerequisites import require_tool
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

EXPECTED = {  # the outputs every sample request gets: ones everywhere, "hello" for text
    "Mixed": {"total": [[4.0]], "loud": [["HELLO"]]},
    "Plain": {"trace": [2.0], "count": [1]},
}


@pytest.fixture(scope="module")
def served(triton_install: TritonInstallation) -> Iterator[ServeProcess]:
    with serving("tests/apps/banner/app.py:models", triton_install, r"^Press Ctrl\+C to stop\.$") as serve:
        yield serve


def _run_infer(line: str) -> dict[str, Any]:
    argv = shlex.split(line)
    assert argv[:2] == ["repogen", "infer"], line
    result = repogen(*argv[1:], "--json")
    assert result.returncode == 0, f"{line}\n{result.stderr}"
    return {o["name"]: o["data"] for o in json.loads(result.stdout)["outputs"]}


def _run_curl(line: str) -> dict[str, Any]:
    """The printed line run as printed, by curl itself (.ci/run installs it): a stand-in would not check the quoting."""
    argv = shlex.split(line)
    assert argv[:2] == ["curl", "-s"] and argv[3] == "-d", line
    curl = require_tool("curl", "curl", "run the curl line the banner prints")
    body = subprocess.run([curl, *argv[1:]], capture_output=True, text=True, check=True, timeout=30).stdout
    return {o["name"]: o["data"] for o in json.loads(body)["outputs"]}


def _flat(nested: Any) -> list[Any]:
    return [x for item in nested for x in _flat(item)] if isinstance(nested, list) else [nested]


def test_printed_examples_work_as_printed(served: ServeProcess) -> None:
    infer_line = served.wait_for(r"^\s+(repogen infer .*)$")[1]
    curl_line = served.wait_for(r"^\s+(curl -s .*)$")[1]
    assert infer_line == (
        "repogen infer Mixed --input 'x=[[1.0,1.0,1.0]]' --input 'v=[[1]]' --input 'text=[[\"hello\"]]' "
        f"--url 127.0.0.1:{served.http}"
    )
    assert _run_infer(infer_line) == EXPECTED["Mixed"]
    assert _run_curl(curl_line) == {name: _flat(data) for name, data in EXPECTED["Mixed"].items()}


def test_every_model_gets_a_working_example(served: ServeProcess) -> None:
    """The banner shows one model; the builders it uses work for each, batched or not."""
    with tritonclient.http.InferenceServerClient(f"127.0.0.1:{served.http}") as client:
        metadata = {name: client.get_model_metadata(name) for name in EXPECTED}
    assert [t["shape"] for t in metadata["Plain"]["inputs"]] == [[2, 2], [-1]]  # no batch dimension
    for name, expected in EXPECTED.items():
        line = sample_infer(name, metadata[name], served.http)
        assert _run_infer(line) == expected, line
        curl = sample_curl(f"127.0.0.1:{served.http}", name, metadata[name])
        assert _run_curl(curl) == {n: _flat(d) for n, d in expected.items()}, curl
