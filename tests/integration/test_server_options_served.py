"""The tritonserver options a repository's models depend on, on the real server (tests/apps/server_options/app.py).

Served as ``repogen serve`` serves it (the options the build recorded passed): N identical requests reach the
callable once and Triton counts N-1 cache hits; two instances needing the one ``slot`` never execute at once. Served
by a tritonserver started without them: the same models log one line each naming the flag, set
``repogen_server_option_missing`` on the metrics endpoint, ``repogen status`` says so, and the control shows what
the options change: every request reaches the callable, and the two instances run together. ``Triton.run()`` with
PyTriton's ``TritonConfig(response_cache_byte_size=N)`` caches too
(tests/containers/test_server_options_in_containers.py runs the deploy files).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from repogen import ModelConfig, Tensor, Triton, TritonConfig
from repogen.testing.client import PROTOCOLS, InferenceServerException, infer
from repogen.testing.option_checks import cached_calls, limited_spans, overlaps
from repogen.testing.scrape import scrape

pytestmark = pytest.mark.integration

APP = "tests/apps/server_options/app.py:models"
IDENTICAL = 6
CACHE_LINE = (
    "model 'Cached': tritonserver was started without --cache-config=local,size=8388608: its config enables the "
    "response cache"
)
RATE_LINE = "model 'Limited': tritonserver was started without --rate-limit=execution_count: "


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("server_options") / "repo"
    cli_build(APP, repository)
    return repository


@pytest.fixture(scope="module")
def served(triton_install, repo):
    said: list[str] = []
    with triton_install.serving(repo, echo=said.append) as serving:
        assert "tritonserver options the models depend on: --cache-config=local,size=8388608 --rate-limit=" \
               "execution_count (repogen inspect says why)" in said  # fmt: skip
        yield serving.server


@pytest.fixture(scope="module")
def bare(serve, repo):
    """A tritonserver started with none of the options (the serve fixture passes no extra arguments)."""
    return serve(repo)


def test_identical_requests_reach_the_callable_once(served):
    before = cached_calls("http", served, 7.0)  # a fresh x: the callable runs
    assert [cached_calls(PROTOCOLS[i % 2], served, 7.0) for i in range(IDENTICAL - 1)] == [before] * (IDENTICAL - 1)
    metrics = scrape(served.metrics_url)
    assert metrics.value("nv_cache_num_hits_per_model", model="Cached", version="1") == IDENTICAL - 1
    assert metrics.value("nv_inference_exec_count", model="Cached", version="1") == before
    assert cached_calls("grpc", served, 8.0) == before + 1  # another request reaches it again


def test_triton_caches_a_failed_response_as_an_empty_answer(served):
    """docs/known-issues.md: core caches every response, an error too, and keeps its outputs only. When this
    fails, a release stopped caching errors: say so there."""
    x = {"x": np.array([-1.0], dtype=np.float32)}
    with pytest.raises(InferenceServerException, match=r"InvalidArgumentError \[INVALID_ARG\]: x must be >= 0"):
        infer("http", served, "Cached", x)
    for protocol in PROTOCOLS:
        assert infer(protocol, served, "Cached", x, outputs=["calls"])["calls"] is None  # 200/OK, no outputs


def test_two_instances_needing_the_one_slot_never_execute_at_once(served):
    found = limited_spans(served)
    assert overlaps(found) == [], found
    assert len({pid for _, _, pid in found}) == 2, found  # both instances served


def test_a_server_started_without_them_says_so(bare, repo):
    log = bare.log_path.read_text(errors="replace")
    assert CACHE_LINE in log and RATE_LINE in log
    assert log.count("tritonserver was started without") == 2  # one line per model, not per instance
    metrics = scrape(bare.metrics_url)
    assert metrics.value("repogen_server_option_missing", model="Cached", option="--cache-config") == 1
    assert metrics.value("repogen_server_option_missing", model="Limited", option="--rate-limit") == 1
    done = subprocess.run(
        [sys.executable, "-m", "repogen", "status", "--url", bare.http_url, "--metrics-url", bare.metrics_url,
         "--no-probe"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "    tritonserver was started without --cache-config, which this model depends on" in done.stdout
    assert "    tritonserver was started without --rate-limit, which this model depends on" in done.stdout


def test_without_them_the_cache_and_the_limit_do_nothing(bare):
    """The control: the same repository on a server without the options."""
    first = cached_calls("http", bare, 3.0)
    assert [cached_calls("grpc", bare, 3.0) for _ in range(3)] == [first + 1, first + 2, first + 3]
    assert overlaps(limited_spans(bare)) != []


def test_triton_run_takes_pytritons_cache_size(triton_install):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, response_cache_byte_size=4 << 20)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        "TritonConfig(response_cache_byte_size=4194304) is deprecated (as tritonserver's --response-cache-byte-size "
        "since 23.03): taken as cache_config=['local,size=4194304']; say that instead"
    ]
    triton = Triton(config=config, triton_release=triton_install.install.release.tritonserver,
                    server_python=triton_install.venv.python_version)  # fmt: skip
    counted: list[int] = []

    def echo(requests):
        counted.append(len(requests))  # in the server's process: the answer says how many calls it saw
        return [{"y": np.array([len(counted)], dtype=np.int64)} for _ in requests]

    triton.bind("Echo", echo, inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
                outputs=[Tensor(name="y", dtype=np.int64, shape=(1,))],
                config=ModelConfig(batching=False, response_cache=True))  # fmt: skip
    with triton:
        triton.run()
        server = triton._served.serving.server  # type: ignore[union-attr]
        answers = [infer(PROTOCOLS[i % 2], server, "Echo", {"x": np.array([1.0], dtype=np.float32)}) for i in range(4)]
        assert [int(a["y"][0]) for a in answers] == [1, 1, 1, 1]
        assert scrape(server.metrics_url).value("nv_cache_num_hits_per_model", model="Echo", version="1") == 3
