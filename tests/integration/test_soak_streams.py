"""Soak: 10,000 streams, 16 at a time, every other one cancelled after 2 of its 6 tokens, over HTTP and over gRPC.

Proves that cancellation neither loses nor mixes up tokens of the streams read to their end, that each
cancelled generator stops and runs its finally:, and that the stub does not grow: its VmRSS after the run
stays within 10% of its value after a 1,000-stream warm-up.

Over HTTP a reader cancels by closing its connection (``generate_stream``; the server cancels the request from
2.41 on). Over gRPC it stops its stream with ``cancel_requests=True``, and there tritonserver before 2.57 (NGC
25.04) now and then dies in its own gRPC code (``GRPC_CANCEL_CRASH``, docs/known-issues.md; hand-written models
crash it alike). A gRPC soak the crash ended, with no stream wrong until then, runs again on a fresh server, up
to ATTEMPTS times; if every one crashed the test is an xfail that names the crashes. A stream with wrong tokens
fails either test whatever the server did.

Every wait for a stream's next response is bounded (STREAM_WAIT_S) and a stream that never answered is named:
its number travels as its request's id and ``stream`` parameter, and Burst remembers what it did with each, so
the failure says whether the request never reached the model, the model ended it (its FINAL sent) or the model
is still at it. Only the last is the model's or the runtime's doing; the first two, over gRPC on a release with
the race, put the loss in the server's frontend and count as the crash does. (One such stream was seen, on an
AVX-512 machine, before streams were accounted for: a 60 s wait that ended the soak with ``queue.Empty``.)
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from test_soak import MAX_RSS_GROWTH, rss_kib, stub_pid
from tritonclient.utils import InferenceServerException

from repogen.testing.crashes import died_of_a_signal
from repogen.testing.server_under_test import pairing_under_test
from repogen.triton.known_issues import GRPC_CANCEL_CRASH, HTTP_STREAM_DISCONNECT_CRASH

pytestmark = [pytest.mark.integration, pytest.mark.soak]

MODEL = "Burst"
TOTAL = 10_000
WARMUP = 1_000
CONCURRENCY = 16
TOKENS = 12  # a cancelled stream leaves 10 unread: room for the cancellation to travel on a loaded machine
READ = 2  # what a cancelled stream's reader takes
REPORT = -1  # Burst's counts since it was last asked (tests/apps/cancel/app.py)
ATTEMPTS = 2  # gRPC soaks on a fresh server each, where the known crash took the one before
WRONG_TOKENS = "stream got tokens"
STREAM_WAIT_S = 60.0  # for a stream's next response: a 6-token stream takes ~10 ms, 16 at once well under 1 s
NO_ANSWER = "no response"
SEEN = -2  # Burst's answer about a stream it was given (tests/apps/cancel/app.py)


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory):
    built = tmp_path_factory.mktemp("soak-streams") / "repo"
    cli_build("tests/apps/cancel/app.py:models", built)
    return built


def _checked(got: list[int], cancel: bool, errors: list[str]) -> bool:
    """Whether a stream got what it should (all tokens in order, or the first READ); else why, in ``errors``."""
    if got == list(range(READ if cancel else TOKENS)):
        return True
    errors.append(f"{WRONG_TOKENS} {got} ({'cancelled' if cancel else 'read to its end'})")
    return False


def _no_answer(stream: int, cancel: bool, got: list[int]) -> str:
    """The error of a stream whose next response did not come: it names the stream, for ``_lost``."""
    reader = f"to be cancelled after {READ} tokens" if cancel else "to be read to its end"
    return f"{NO_ANSWER} in {STREAM_WAIT_S:.0f} s to stream {stream} ({reader}) after {len(got)} token(s)"


def _one_grpc(client: grpcclient.InferenceServerClient, stream: int, cancel: bool, errors: list[str]) -> bool:
    """Stream number ``stream`` on ``client``, stopped with ``cancel_requests=True`` where ``cancel`` and
    unfinished; its number goes as the request's id and as the ``stream`` parameter Burst remembers."""
    events: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
    tensor = grpcclient.InferInput("n", [1], "INT32")
    tensor.set_data_from_numpy(np.array([TOKENS], np.int32))
    got, ended = [], False
    try:
        client.async_stream_infer(
            MODEL, [tensor], request_id=f"soak-{stream}", parameters={"stream": stream},
            enable_empty_final_response=True,
        )  # fmt: skip
        while not ended and not (cancel and len(got) == READ):
            try:
                event = events.get(timeout=STREAM_WAIT_S)
            except queue.Empty:
                errors.append(_no_answer(stream, cancel, got))
                return False
            if isinstance(event, Exception):
                errors.append(f"after {len(got)} token(s): {event}")
                return False
            response = event.get_response()
            if response.outputs:
                got.append(int(event.as_numpy("token")[0]))
            ended = response.parameters["triton_final_response"].bool_param
    except InferenceServerException as refused:  # the stream broke before its request went out
        errors.append(f"before the request: {refused}; the stream's callback had: {_drained(events)}")
        return False
    finally:
        client.stop_stream(cancel_requests=not ended)
    return _checked(got, cancel, errors)


def _drained(events: queue.Queue) -> list[str]:
    """What the callback reported; the error that broke a stream may come a moment after it broke."""
    seen, timeout = [], 5.0
    while True:
        try:
            seen.append(str(events.get(timeout=timeout)))
        except queue.Empty:
            return seen
        timeout = 0.1


def _one_http(address: tuple[str, int], stream: int, cancel: bool, errors: list[str]) -> bool:
    """Stream number ``stream``: a ``generate_stream`` read on a connection of its own, closed after READ tokens
    where ``cancel`` (the generate extension takes a field that is no input as a parameter: ``stream``)."""
    connection = http.client.HTTPConnection(*address, timeout=STREAM_WAIT_S)
    got: list[int] = []
    try:
        body = json.dumps({"n": TOKENS, "stream": stream})
        connection.request("POST", f"/v2/models/{MODEL}/generate_stream", body=body)
        response = connection.getresponse()
        if response.status != 200:
            errors.append(f"HTTP {response.status}: {response.read()[:300]!r}")
            return False
        while not (cancel and len(got) == READ):
            line = response.readline()
            if not line:  # the server ended the stream
                break
            if line.startswith(b"data:"):
                event = json.loads(line[5:])
                if "error" in event:
                    errors.append(f"after {len(got)} token(s): {event['error']}")
                    return False
                token = event["token"]
                got.append(int(token[0] if isinstance(token, list) else token))
    except TimeoutError:
        errors.append(_no_answer(stream, cancel, got))
        return False
    except OSError as lost:
        errors.append(f"after {len(got)} token(s): {lost!r}")
        return False
    finally:
        connection.close()  # the reader leaves: the server cancels a request still streaming
    return _checked(got, cancel, errors)


def _drive(server, first: int, count: int, transport: str) -> list[str]:
    """``count`` streams from ``CONCURRENCY`` threads (a gRPC client each); what went wrong, one line each."""
    errors: list[str] = []
    host, port = server.http_url.split("://", 1)[-1].rsplit(":", 1)
    stop = threading.Event()

    def worker(offset: int) -> None:
        client = grpcclient.InferenceServerClient(server.grpc_url) if transport == "grpc" else None
        try:
            for i in range(offset, count, CONCURRENCY):
                if stop.is_set():
                    return
                stream = first + i
                cancel = stream % 2 == 1
                if client is not None:
                    right = _one_grpc(client, stream, cancel, errors)
                else:
                    right = _one_http((host, int(port)), stream, cancel, errors)
                if not right and not server.is_running():
                    return  # what is left would only fail to connect
        finally:
            if client is not None:
                client.close()

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        try:
            list(pool.map(worker, range(CONCURRENCY)))
        finally:  # Ctrl+C: each worker ends after its stream in flight, not after its share of the streams
            stop.set()
    return errors


class KnownRace(Exception):
    """tritonserver's gRPC cancellation race took the soak: the server died, or it lost streams the model had
    ended or never got, and no stream went wrong otherwise."""


def _all_right(server, errors: list[str], transport: str) -> None:
    """Fail on any stream that went wrong, unless the known race took the server and only cut streams off or
    lost them on their way (which the model's own account of each says)."""
    if not errors:
        return
    pairing = pairing_under_test()
    racy = transport == "grpc" and GRPC_CANCEL_CRASH.affects(pairing.release, pairing.python)
    signal = died_of_a_signal(server)
    if signal and racy:
        # a stream the crash cut off ends in an error the client or the dying server reported, never in wrong tokens
        wrong = [e for e in errors if e.startswith(WRONG_TOKENS)]
        assert not wrong, f"besides the crash, {len(wrong)} stream(s) went wrong: {Counter(wrong).most_common(5)}"
        cut = Counter(errors).most_common(3)
        raise KnownRace(f"{signal} after {len(errors)} stream(s) were cut off: {cut}")
    state = "running" if server.is_running() else f"exited\n{server.log_tail()}"
    lost = _lost(server, errors) if server.is_running() else []
    if racy and lost and len(lost) == len(errors) and all(in_server for _, in_server in lost):
        accounts = "; ".join(account for account, _ in lost[:5])
        raise KnownRace(f"{len(lost)} stream(s) never answered, lost in the running server: {accounts}")
    accounts = "".join(f"; {account}" for account, _ in lost[:5])
    raise AssertionError(
        f"{len(errors)} stream(s) went wrong: {Counter(errors).most_common(5)}; server {state}{accounts}"
    )


def _lost(server, errors: list[str]) -> list[tuple[str, bool]]:
    """For each stream that never answered, what Burst says it did with it, and whether that puts the loss in the
    server (Burst never got the request, or ended the stream: its FINAL went out) rather than in the model (Burst
    still streaming it a minute on)."""
    found = []
    for error in [e for e in errors if e.startswith(NO_ANSWER)][:20]:
        stream = int(re.search(r"to stream (\d+)", error).group(1))  # type: ignore[union-attr]
        got, made, closed = _ask(server, SEEN, {"stream": stream})
        if not got:
            found.append((f"stream {stream}: its request never reached Burst ({error})", True))
        elif closed:
            found.append((f"stream {stream}: Burst made {made} of {TOKENS} token(s) and ended it ({error})", True))
        else:
            found.append((f"stream {stream}: Burst is still streaming it, {made} token(s) made ({error})", False))
    return found


def _report(server) -> list[int]:
    return _ask(server, REPORT, {})


def _ask(server, n: int, parameters: dict[str, int]) -> list[int]:
    """Burst's answer to ``n`` (REPORT or SEEN), on a stream of its own."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    events: queue.Queue = queue.Queue()
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        tensor = grpcclient.InferInput("n", [1], "INT32")
        tensor.set_data_from_numpy(np.array([n], np.int32))
        client.async_stream_infer(MODEL, [tensor], parameters=parameters or None)
        event = events.get(timeout=STREAM_WAIT_S)
        assert not isinstance(event, Exception), event
        return [int(v) for v in event.as_numpy("token")]
    finally:
        client.stop_stream()
        client.close()


def test_ten_thousand_http_streams_half_disconnected_without_loss_or_stub_growth(serve, repo):
    pairing = pairing_under_test()
    if HTTP_STREAM_DISCONNECT_CRASH.affects(pairing.release, pairing.python):
        pytest.skip(f"{HTTP_STREAM_DISCONNECT_CRASH.title} on tritonserver {pairing.release.tritonserver}")
    _soak(serve(repo), "http", [])


def test_ten_thousand_grpc_streams_half_cancelled_without_loss_or_stub_growth(serve, repo):
    crashes: list[str] = []
    for _ in range(ATTEMPTS):
        try:
            return _soak(serve(repo), "grpc", crashes)
        except KnownRace as crash:
            crashes.append(str(crash))
    pytest.xfail(
        f"{GRPC_CANCEL_CRASH.title} (docs/known-issues.md): tritonserver's gRPC race took each of {ATTEMPTS} soaks, "
        f"every stream right until then: {crashes}"
    )


def _soak(server, transport: str, crashes: list[str]) -> None:
    pid = stub_pid(server, MODEL)
    _all_right(server, _drive(server, 0, WARMUP, transport), transport)
    rss_warm = rss_kib(pid)
    _report(server)  # from zero
    _all_right(server, _drive(server, WARMUP, TOTAL - WARMUP, transport), transport)
    rss_end = rss_kib(pid)
    produced, after_cancel, closed = _report(server)
    streams, cancelled = TOTAL - WARMUP, (TOTAL - WARMUP) // 2
    growth = (rss_end - rss_warm) / rss_warm
    print(
        f"\n{transport} stream soak: {TOTAL} streams at concurrency {CONCURRENCY}, every other one cancelled after "
        f"{READ} of {TOKENS} tokens; after warm-up: {produced} tokens made for {streams - cancelled} * {TOKENS} + "
        f"{cancelled} * {READ} read, {after_cancel} after a cancellation, {closed} finally: blocks; "
        f"stub VmRSS {rss_warm} KiB -> {rss_end} KiB ({growth:+.1%}); earlier soaks the server crashed in: "
        f"{crashes or 'none'}"
    )
    assert stub_pid(server, MODEL) == pid, "the stub restarted during the soak"
    assert closed == streams and after_cancel <= cancelled
    # beyond what readers took, a cancelled stream costs the tokens made while its cancellation travels from the client
    # to the stub (2 ms apart: one or two on a quiet machine, about three on CI's 2 cores under load), never the half
    # of its unread ones a lost cancellation would cost
    unread = produced - (streams - cancelled) * TOKENS - cancelled * READ
    assert unread <= (TOKENS - READ) // 2 * cancelled, f"{unread / cancelled:.1f} tokens made per cancelled stream"
    assert growth < MAX_RSS_GROWTH, f"stub RSS grew {growth:.1%}: {rss_warm} KiB -> {rss_end} KiB"


def test_a_stream_that_never_answered_is_accounted_for(serve, repo):
    """What ``_lost`` reads from Burst: a stream it served to its end, and one whose request it never got."""
    server = serve(repo)
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        assert _one_grpc(client, 7, False, errors := [])
    finally:
        client.close()
    missing = [_no_answer(7, False, []), _no_answer(8, True, [0])]
    accounts = _lost(server, missing)
    assert accounts[0] == (f"stream 7: Burst made {TOKENS} of {TOKENS} token(s) and ended it ({missing[0]})", True)
    assert accounts[1] == (f"stream 8: its request never reached Burst ({missing[1]})", True)
    assert errors == []
