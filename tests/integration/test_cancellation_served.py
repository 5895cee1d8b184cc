"""Clients that leave: a cancelled stream stops its generator at its next step, through BLS too, and a
cancelled request waiting in the dynamic batcher's queue never reaches its callable.

Every number is counted by the model in its own stub (tests/apps/cancel: ``n = -1`` asks a model what it
counted), never by a clock here. The report request is served by the same single instance after the
cancelled one, so a ``closed`` count of 1 there means the generator's ``finally:`` ran before the next
request was served.
"""

from __future__ import annotations

import http.client
import json
import queue
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from repogen.testing.client import infer
from repogen.testing.crashes import died_of_a_signal
from repogen.testing.server_under_test import pairing_under_test
from repogen.triton.known_issues import GRPC_CANCEL_CRASH, HTTP_STREAM_DISCONNECT_CRASH

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

TOKENS = 200
READ = 5
REPORT_N = -1
SENDER_CLOSED = "Response sender has been closed"
_pairing = pairing_under_test()
ATTEMPTS = 3  # servers the 32 streams may take where tritonserver's own gRPC race kills them


@pytest.fixture(scope="module")
def repository(cli_build, tmp_path_factory):
    built = tmp_path_factory.mktemp("cancel") / "repo"
    cli_build("tests/apps/cancel/app.py:models", built)
    return built


@pytest.fixture(scope="module")
def server(serve, repository):
    return serve(repository)


def _stream(server, model: str, n: int, read: int | None = None) -> list[np.ndarray]:
    """A stream's tokens: all of them up to its final flag, or the first ``read`` and then cancel it, as a
    reader closing the tab does (``stop_stream(cancel_requests=True)``)."""
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    got: list[np.ndarray] = []
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        tensor = grpcclient.InferInput("n", [1], "INT32")
        tensor.set_data_from_numpy(np.array([n], np.int32))
        client.async_stream_infer(model, [tensor], enable_empty_final_response=True)
        ended = False
        while not ended and (read is None or len(got) < read):
            event = events.get(timeout=60)
            assert not isinstance(event, Exception), _described(event, server)
            response = event.get_response()
            if response.outputs:
                got.append(event.as_numpy("token"))
            ended = response.parameters["triton_final_response"].bool_param
        client.stop_stream(cancel_requests=not ended)  # after the final flag, a cancel can hold the model (2.51)
    finally:
        client.close()
    return got


def _described(error: Exception, server) -> str:
    """A stream's error with what tritonclient's ``str`` may leave out (an empty message), and the server's state."""
    status, details = getattr(error, "status", lambda: None)(), getattr(error, "debug_details", lambda: None)()
    state = "running" if server.is_running() else f"exited:\n{server.log_tail()}"
    return f"{type(error).__name__}({error!s}) status={status!r} details={details!r}; server {state}"


def _read_then_cancel(server, model: str) -> list[int]:
    return [int(token[0]) for token in _stream(server, model, TOKENS, read=READ)]


def _report(server, model: str) -> dict[str, int]:
    (answer,) = _stream(server, model, REPORT_N)
    produced, after_cancel, closed = (int(v) for v in answer)
    return {"produced": produced, "after_cancel": after_cancel, "closed": closed}


def _settled_report(server, model: str) -> dict[str, int]:
    """What ``model`` counted until its cancelled stream's ``finally:`` ran: the first report where the model serves
    one stream at a time (the report waits behind it), the sum of reports until then where its async generator's
    streams run concurrently (NGC 24.04+, runtime/concurrency.py: the report does not wait for the cancelled one)."""
    total = {"produced": 0, "after_cancel": 0, "closed": 0}
    deadline = time.monotonic() + 10
    while not total["closed"] and time.monotonic() < deadline:
        total = {key: value + total[key] for key, value in _report(server, model).items()}
        time.sleep(0 if total["closed"] else 0.05)
    return total


@pytest.mark.parametrize("model", ["Tokens", "AsyncTokens"])
def test_a_cancelled_stream_stops_at_its_next_token(server, model):
    assert _read_then_cancel(server, model) == list(range(READ))
    report = _settled_report(server, model)
    assert report["after_cancel"] <= 1, report
    assert report["closed"] == 1, report  # its finally: ran (before the report, where it is served after it)
    assert report["produced"] < 3 * READ, report  # not 200: the rest was never made
    assert SENDER_CLOSED not in server.log_text()


def test_a_cancelled_caller_stops_its_bls_stream(server):
    assert _read_then_cancel(server, "Relay") == list(range(READ))
    relay = _report(server, "Relay")
    # Relay answers its report only after its cancelled execute returned, and that drained Tokens' stream
    callee = _report(server, "Tokens")
    assert relay["after_cancel"] <= 1 and relay["closed"] == 1, relay
    assert callee["after_cancel"] <= 1 and callee["closed"] == 1, callee
    assert callee["produced"] < 3 * READ, callee
    assert SENDER_CLOSED not in server.log_text()


def test_streams_read_to_the_end_are_whole_after_cancelled_ones(server):
    for model in ("Tokens", "AsyncTokens", "Relay"):
        assert [int(token[0]) for token in _stream(server, model, 7)] == list(range(7)), model
        report = _report(server, model)
        assert report["produced"] == 7 and report["after_cancel"] == 0 and report["closed"] == 1, (model, report)


def test_a_cancelled_request_waiting_in_the_queue_never_reaches_the_callable(server):
    """Two requests wait behind a long one; one is cancelled. The other is served in a batch of its own."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    done: queue.Queue = queue.Queue()

    def send(value: int):
        n = grpcclient.InferInput("n", [1, 1], "INT32")
        n.set_data_from_numpy(np.array([[value]], np.int32))
        return client.async_infer("Queued", [n], callback=lambda result, error: done.put((value, result, error)))

    try:
        send(1500)  # holds the only instance
        time.sleep(0.5)  # let it start, so that the next two wait in the queue
        waiting = send(1)
        send(2)
        time.sleep(0.2)
        waiting.cancel()
        answers = {}
        for _ in range(3):
            value, result, error = done.get(timeout=60)
            answers[value] = error if error is not None else int(result.as_numpy("served")[0, 0])
    finally:
        client.close()
    assert answers[1500] == 1 and answers[2] == 1, answers  # the live one's batch: itself alone
    assert "Cancelled" in str(answers[1]) or "CANCELLED" in str(answers[1]), answers
    served = infer("grpc", server, "Queued", {"n": np.array([[-1]], np.int32)})["served"]
    assert int(served[0, 0]) == 2  # the 1.5 s request and the live one; the cancelled one never ran


def _cli(server, *args: str, sigint: signal.Handlers = signal.SIG_DFL) -> subprocess.Popen:
    """``repogen infer ARGS`` against the server, started with SIGINT as ``sigint`` (what it inherits)."""
    return subprocess.Popen(
        [sys.executable, "-m", "repogen", "infer", *args, "--url", server.grpc_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"])
def test_cli_stream_interrupted_by_ctrl_c_cancels_the_request(server, inherited):
    """Also when infer starts with SIGINT ignored (``nohup``, a background job in a script, some CI runners)."""
    _report(server, "Tokens")  # from zero: Relay's streams count in Tokens too
    infer_cli = _cli(server, "Tokens", "--stream", "-i", f"n={TOKENS}", sigint=inherited)
    try:
        assert infer_cli.stdout is not None
        lines = []
        while sum("response" in line for line in lines) < READ:  # "Tokens: response 1" and so on
            line = infer_cli.stdout.readline()
            assert line, infer_cli.stderr.read() if infer_cli.stderr else ""
            lines.append(line)
        infer_cli.send_signal(signal.SIGINT)
        _, err = infer_cli.communicate(timeout=60)
    finally:
        if infer_cli.poll() is None:
            infer_cli.kill()
            infer_cli.wait()
    assert infer_cli.returncode == 130, err
    assert "interrupted after" in err and "the stream was cancelled on the server" in err, err
    report = _report(server, "Tokens")
    assert report["after_cancel"] <= 1 and report["closed"] == 1 and report["produced"] < TOKENS // 2, report


def test_cli_timeout_cancels_the_request(server):
    _report(server, "Tokens")
    infer_cli = _cli(server, "Tokens", "--stream", "-i", f"n={TOKENS}", "--timeout", "0.3")
    out, err = infer_cli.communicate(timeout=60)
    assert infer_cli.returncode != 0
    assert "did not finish its stream within 0.3 s; the request was cancelled" in err, (infer_cli.returncode, err, out)
    report = _report(server, "Tokens")
    assert report["after_cancel"] <= 1 and report["closed"] == 1 and report["produced"] < TOKENS // 2, report


def test_cli_timeout_of_one_call_cancels_it(server):
    infer_cli = _cli(server, "Queued", "-i", "n=[[700]]", "--timeout", "0.3")
    out, err = infer_cli.communicate(timeout=60)
    assert infer_cli.returncode != 0
    expected = "model 'Queued' did not answer within 0.3 s; the request was cancelled."
    assert expected in err, (infer_cli.returncode, err, out)


def test_queue_policy_timeouts_keep_expired_requests_from_the_callable(server):
    """A 1.5 s default, which a request may shorten (``timeout`` in microseconds; Triton never lets it grow):
    requests expired in the queue never run."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    done: queue.Queue = queue.Queue()

    def send(value: int, **options):
        n = grpcclient.InferInput("n", [1, 1], "INT32")
        n.set_data_from_numpy(np.array([[value]], np.int32))
        client.async_infer("Expiring", [n], callback=lambda result, error: done.put((value, result, error)), **options)

    try:
        send(3000)  # holds the only instance
        time.sleep(0.3)
        send(1)  # waits 2.7 s: past the default
        time.sleep(2.2)
        send(2, timeout=100_000)  # waits 0.5 s: past its own 100 ms
        send(3)  # waits 0.5 s (up to 1.5 s if the long one started late): within the default, then runs
        answers = {}
        for _ in range(4):
            value, result, error = done.get(timeout=60)
            answers[value] = error.message() if error is not None else int(result.as_numpy("served")[0, 0])
    finally:
        client.close()
    served = infer("grpc", server, "Expiring", {"n": np.array([[-1]], np.int32)})["served"]
    assert answers[3000] == 1 and answers[1] == "Request timeout expired", answers
    if _pairing.release.tritonserver == "2.39.0":  # 2.39 ignores a request's own timeout (known-issues.md)
        assert isinstance(answers[2], int) and isinstance(answers[3], int) and int(served[0, 0]) == 3, answers
        return
    assert answers[2] == "Request timeout expired" and answers[3] == 1, answers
    assert int(served[0, 0]) == 2, answers  # the long one and the one that did not wait too long


def test_32_streams_half_cancelled_at_random_points(serve, repository):
    """Every stream read to its end has every token in order; each cancelled one stops (at most one token made
    after the server saw its cancellation), and every generator's finally: ran.

    On a server of its own: tritonserver's gRPC race (GRPC_CANCEL_CRASH) now and then kills the server here (2.39
    under load: "sync.cc:105 assertion failed: prior > 0", signal 6); that crash is retried on a fresh server, and
    is an xfail naming it when it took every attempt. Anything else fails."""
    crashes = []
    for _ in range(ATTEMPTS):
        server = serve(repository)
        try:
            return _half_cancelled(server)
        except AssertionError:
            crash = died_of_a_signal(server)
            if crash is None or not GRPC_CANCEL_CRASH.affects(_pairing.release, _pairing.python):
                raise
            crashes.append(crash)
    pytest.xfail(f"{GRPC_CANCEL_CRASH.title} (docs/known-issues.md): it took each of {ATTEMPTS} servers: {crashes}")


def _half_cancelled(server) -> None:
    tokens, streams = 100, 32
    rng = random.Random(45)
    plan = [rng.randrange(1, tokens // 2) if index % 2 else None for index in range(streams)]  # None: to the end
    with ThreadPoolExecutor(streams) as pool:
        got = list(pool.map(lambda read: _stream(server, "Burst", tokens, read=read), plan))
    for read, answer in zip(plan, got, strict=True):
        expected = list(range(tokens if read is None else read))
        assert [int(token[0]) for token in answer] == expected
    (report,) = _stream(server, "Burst", REPORT_N)
    produced, after_cancel, closed = (int(v) for v in report)
    cancelled = [read for read in plan if read is not None]
    assert closed == streams and after_cancel <= len(cancelled), report
    # The cancelled streams stopped short of their end: run out, they would have made `tokens` each. What they made
    # beyond what their readers took is what was in flight until the server saw the cancel: a token a millisecond
    # for as long as that took, which a loaded host stretches (83 for 16 streams in one CI run), so the bound is
    # half the rest, not a latency.
    beyond = produced - tokens * (streams - len(cancelled)) - sum(cancelled)
    assert beyond < (tokens * len(cancelled) - sum(cancelled)) // 2, report


@pytest.mark.xfail(
    HTTP_STREAM_DISCONNECT_CRASH.affects(_pairing.release, _pairing.python),
    strict=True,
    reason=f"{HTTP_STREAM_DISCONNECT_CRASH.title} (docs/known-issues.md)",
)
def test_an_http_generate_stream_reader_that_disconnects_stops_the_generator(server):
    """tritonserver 2.41+ cancels an HTTP request whose connection closes before its reply. Last in this file:
    on 2.39 the disconnect kills the server."""
    _report(server, "Tokens")
    host, port = server.http_url.split("://", 1)[-1].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request("POST", "/v2/models/Tokens/generate_stream", body=json.dumps({"n": TOKENS}))
        response = connection.getresponse()
        assert response.status == 200, response.read()
        events = 0
        while events < READ:
            line = response.readline()
            assert line, "the stream ended early"
            events += line.startswith(b"data:")
    finally:
        connection.close()  # the reader leaves
    time.sleep(0.5)  # the server notices the closed connection on its own; the report waits for the stream anyway
    report = _report(server, "Tokens")
    assert report["after_cancel"] <= 1 and report["closed"] == 1 and report["produced"] < TOKENS // 2, report
