"""A callable fails one request with a code, and the client sees it: HTTP 400/404/503 (2.42+; every error is 400
before), gRPC INVALID_ARGUMENT/NOT_FOUND/UNAVAILABLE; anything else INTERNAL (500). The code survives a BLS call
(the caller's ModelCallError carries it, re-raising keeps it), an ensemble and a fused pipeline, and in a batch
the dynamic batcher merged only the wrong request fails (tests/apps/error_codes/app.py)."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, expected_status, infer

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

F32 = np.float32
APP = Path(__file__).resolve().parents[1] / "apps" / "error_codes" / "app.py"


def at(text: str) -> str:
    """``(at app.py:N, in f)`` for the app's line holding ``text``, as the runtime names where a callable raised."""
    lines = APP.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines, 1) if text in line)
    function = next(line.split()[1].split("(")[0] for line in reversed(lines[:number]) if line.startswith("def "))
    return f"(at app.py:{number}, in {function})"


CASES = {  # x -> (code, the callable's message)
    -1.0: ("INVALID_ARG", f"InvalidArgumentError [INVALID_ARG]: x must be >= 0, found -1 {at('raise InvalidArg')}"),
    400.0: ("INVALID_ARG", f"PyTritonBadParameterError [INVALID_ARG]: x = 400 is a bad parameter {at('raise PyT')}"),
    404.0: ("NOT_FOUND", f"NotFoundError [NOT_FOUND]: no item 404 {at('raise NotFound')}"),
    503.0: ("UNAVAILABLE", f"UnavailableError [UNAVAILABLE]: the item store does not answer {at('raise Unavailable')}"),
    500.0: ("INTERNAL", f"ValueError: a bug {at('raise ValueError')}"),
}
SAID = {  # model -> what its client reads, from the callable's message
    "Checked": "{}",
    "Listed": "{}",
    "Forward": "ModelCallError{code}: model 'Checked' failed: {} " + at('return {"y": checked(x=x)["y"]}'),
    "Pipeline": "in ensemble 'Pipeline', {}",
    "Fused": "{}",
}


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("error_codes") / "repo"
    cli_build("tests/apps/error_codes/app.py:models", repo)
    return serve(repo)


def refused(protocol: str, server, model: str, x: float) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as caught:
        infer(protocol, server, model, {"x": np.array([[x]], dtype=F32)})
    return caught.value


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", sorted(SAID))
def test_each_code_reaches_the_client(server, protocol, model):
    for x, (code, message) in CASES.items():
        error = refused(protocol, server, model, x)
        marker = "" if code == "INTERNAL" else f" [{code}]"
        said = SAID[model].format(message, code=marker)
        assert (error.status(), error.message()) == (expected_status(protocol, code), said)
    assert infer(protocol, server, model, {"x": np.array([[1.0]], dtype=F32)})[
        "z" if model in ("Pipeline", "Fused") else "y"
    ].tolist() == [[4.0 if model in ("Pipeline", "Fused") else 2.0]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_caller_reads_the_code_from_its_model_call_error(server, protocol):
    for x, (code, _) in CASES.items():
        answer = infer(protocol, server, "CodeOf", {"x": np.array([[x]], dtype=F32)})
        assert (answer["code"].tolist(), answer["model"].tolist()) == ([[code.encode()]], [[b"Checked"]])
    answer = infer(protocol, server, "CodeOf", {"x": np.array([[1.0]], dtype=F32)})
    assert answer["code"].tolist() == [[b""]]


def calls_of(answer: dict[str, np.ndarray]) -> list[int]:
    return [int(n) for n in answer["calls"][0, 0].decode().split(",")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["Checked", "Listed", "Fused"])
def test_a_wrong_request_fails_alone_in_its_batch(server, protocol, model):
    """Four requests sent at once share one call (the batcher waits 200 ms for up to 4); one of them is wrong: it
    alone is answered INVALID_ARG, and the others, served again one by one, get their answers."""
    values = [1.0, 2.0, -3.0, 4.0]

    def send(x: float) -> dict[str, np.ndarray] | InferenceServerException:
        try:
            return infer(protocol, server, model, {"x": np.array([[x]], dtype=F32)})
        except InferenceServerException as exc:
            return exc

    with concurrent.futures.ThreadPoolExecutor(len(values)) as pool:
        answers = list(pool.map(send, values))
    bad = answers.pop(2)
    assert isinstance(bad, InferenceServerException), bad
    assert bad.status() == expected_status(protocol, "INVALID_ARG")
    assert "x must be >= 0, found -3" in bad.message()
    output = "z" if model == "Fused" else "y"
    factor = 4 if model == "Fused" else 2
    assert [a[output].tolist() for a in answers] == [[[x * factor]] for x in (1.0, 2.0, 4.0)]  # type: ignore[index]
    for answer in answers:  # each was in the call of 4 that failed, then served alone
        calls = calls_of(answer)  # type: ignore[arg-type]
        assert calls[-1] == 1 and 4 in calls, calls


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["Checked", "Listed"])
def test_a_batch_failed_whole_answers_each_request(server, protocol, model):
    """A bug fails the whole call of 4: each request gets INTERNAL, each its own response object (one object
    answering two requests killed tritonserver 2.51 with SIGSEGV), and the model serves on."""
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        errors = list(pool.map(lambda _: refused(protocol, server, model, 500.0), range(4)))
    assert {(e.status(), e.message()) for e in errors} == {(expected_status(protocol, "INTERNAL"), CASES[500.0][1])}
    assert calls_of(infer(protocol, server, model, {"x": np.array([[1.0]], dtype=F32)}))[-2:] == [4, 1]
