"""Only the outputs a client asked for are converted and sent, and the callable is told which they are
(PyTriton 0.5.12's ``Request.requested_output_names``): tests/apps/requested, over HTTP and gRPC."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer, stream

pytestmark = [pytest.mark.integration]

ALL = ["asked", "double", "square"]
REPORT = {"x": np.array([-1], np.float32)}


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("requested") / "repo"
    cli_build("tests/apps/requested/app.py:models", repository)
    return serve(repository)


def _report(protocol, server, model="Three") -> tuple[int, list[str]]:
    answer = infer(protocol, server, model, REPORT, outputs=ALL)
    return int(answer["double"][0]), [name.decode() for name in answer["asked"]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_output_nobody_asked_for_is_never_converted_nor_sent(server, protocol):
    x = {"x": np.array([3], np.float32)}
    before, _ = _report(protocol, server)
    answer = infer(protocol, server, "Three", x, outputs=["double"])
    assert list(answer) == ["double"] and answer["double"].tolist() == [6.0]
    after, asked = _report(protocol, server)
    assert asked == ["double"]  # what the callable was told
    assert after == before  # `square` was returned, and never converted
    answer = infer(protocol, server, "Three", x)  # none named: all of them
    assert answer["square"].tolist() == [9.0] and answer["double"].tolist() == [6.0]
    converted, asked = _report(protocol, server)
    assert asked == ALL and converted == after + 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_callable_may_compute_only_what_was_asked(server, protocol):
    x = {"x": np.array([3], np.float32)}
    assert infer(protocol, server, "Skipper", x, outputs=["square"]) == {"square": np.array([9.0], np.float32)}
    answer = infer(protocol, server, "Skipper", x, outputs=["double", "asked"])
    assert answer["double"].tolist() == [6.0] and answer["asked"].tolist() == [b"asked", b"double"]


def test_a_stream_sends_only_what_was_asked(server):
    steps = stream(server, "Streamer", {"x": np.array([2], np.float32)}, outputs=["double"])
    assert [sorted(step) for step in steps] == [["double"], ["double"]]
    (report, _) = stream(server, "Streamer", REPORT, outputs=ALL)
    assert int(report["double"][0]) == 0 and [n.decode() for n in report["asked"]] == ["double"]
