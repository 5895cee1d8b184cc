"""Draining a decoupled model's stream through BLS, ours against hand-written code.

The oracle is tests/repos/decoupled_bls: ``Count`` iterates ``exec(decoupled=True)`` on ``Gen`` the
way the Triton docs write it. Ours is the pipeline example's ``WordCount`` draining ``Spell``. Both
are asked ``REQUESTS`` times one after another and ``REQUESTS`` times from ``CLIENTS`` threads.

Where python_backend destroys a drained response iterator without the GIL and the stub runs Python
3.12 (tritonserver before 2.53 / NGC 24.12: here 2.51 + 3.12, see repogen.triton.known_issues), the
hand-written consumer's stub dies with SIGSEGV after a few answers; that test is a strict
xfail there, so it fails the day the hand-written pair starts passing. Ours retires each iterator
behind a barrier (repogen/runtime/streams.py) and must answer every request on every pairing.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from repogen.testing.client import infer
from repogen.testing.server_under_test import pairing_under_test
from repogen.triton.known_issues import BLS_STREAM_WITHOUT_GIL

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

ORACLE = Path(__file__).resolve().parents[1] / "repos" / "decoupled_bls"
REQUESTS = 12
CLIENTS = 4
HAND_WRITTEN_TRIES = 200  # sequential requests to the hand-written consumer, up to its first wrong answer
TEXT = {"text": np.array([b"a b c"], dtype=object)}

_pairing = pairing_under_test()
_affected = BLS_STREAM_WITHOUT_GIL.affects(_pairing.release, _pairing.python)


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    """One server: the hand-written pair and the pipeline example, each model its own stub."""
    root = tmp_path_factory.mktemp("decoupled-bls")
    shutil.copytree(ORACLE, root / "oracle", ignore=shutil.ignore_patterns("*.md"))
    cli_build("examples/pipeline/app.py:models", root / "pipeline")
    return serve(root / "oracle", extra_args=(f"--model-repository={root / 'pipeline'}",))


def _answers(server, model: str, concurrent: bool, requests: int = REQUESTS) -> list[str]:
    """What each request got: "3" (right), another count, or the error's message."""

    def one(_: int) -> str:
        try:
            return str(int(infer("http", server, model, TEXT)["words"][0]))
        except Exception as exc:  # the answer under test: a dead stub's error is data here
            return str(exc)

    if not concurrent:  # up to the first wrong answer: after it, a dead stub takes 1 s per request to say so
        answers = []
        while len(answers) < requests and (not answers or answers[-1] == "3"):
            answers.append(one(len(answers)))
        return answers
    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(one, range(requests)))


@pytest.mark.parametrize("concurrent", [False, True], ids=["sequential", "concurrent"])
def test_ours_answers_every_request(server, concurrent):
    answers = _answers(server, "WordCount", concurrent)
    assert answers == ["3"] * REQUESTS


class KnownCrash(Exception):
    """The hand-written consumer failed as BLS_STREAM_WITHOUT_GIL does: its stub died of SIGSEGV."""


#: The known crash's signature: the stub's faulthandler line in the server's log (the oracle's Count enables it),
#: and every later request's answer. The line names the signal: SIGSEGV here so far, but freeing without the GIL
#: races on the allocator's state, and a race can as well corrupt it into an abort ("Fatal Python error: Aborted").
FATAL_LINE = "Fatal Python error: "
DEAD_STUB = "Stub process 'Count_0_0' is not healthy."


def _check_count(server, answers: list[str], requests: int) -> None:
    """Pass on every answer right; raise KnownCrash only for the known crash's signature, else fail as usual."""
    if answers == ["3"] * requests:
        return
    wrong = [answer for answer in answers if answer != "3"]
    fatal = [line for line in server.log_text().splitlines() if FATAL_LINE in line]
    if fatal and wrong and all(DEAD_STUB in answer for answer in wrong):
        raise KnownCrash(f"Count's stub died ({fatal[0].strip()}); answers: {answers}")
    raise AssertionError(
        f"Count answered {answers[:3]}...{answers[-3:]} ({len(wrong)} of {len(answers)} wrong), not the known crash: "
        f"the log's fatal lines: {fatal or 'none'}; each wrong answer must say {DEAD_STUB!r}"
    )


@pytest.mark.xfail(
    _affected,
    strict=True,
    raises=KnownCrash,
    reason=f"{BLS_STREAM_WITHOUT_GIL.title} (tritonserver before NGC {BLS_STREAM_WITHOUT_GIL.fixed_in} with "
    f"Python >= {BLS_STREAM_WITHOUT_GIL.min_python}; docs/known-issues.md)",
)
def test_hand_written_answers_every_request(server):
    """Runs after ours: a stub it kills takes only the hand-written ``Count`` with it.

    The crash is a race (which thread drops the iterator last): the safe order can win a dozen times running, and
    a strict xfail then fails. Sequential requests cost ms each, so Count is asked up to ``HAND_WRITTEN_TRIES``
    times (on a loaded machine here it died at its 1st to 6th). A CI run of four pytest runs side by side failed
    this test on the affected pairing without its log saying why; the failure now names what was seen. Elsewhere
    it is asked ``REQUESTS`` times, as before: on 3.10 the free without the GIL is a silent race, and asked 200 times
    in a row on CI's loaded machine its stub died there too (after 24 right answers; on 2026-11-30 after 10, of
    "Fatal Python error: Aborted", in a fresh clone's `.ci/run` on 2.51 + 3.10). So elsewhere the known crash is an
    xfail that says it was seen, not a failure: the hand-written pair is the oracle, not the code under test, and
    any other wrong answer still fails.
    """
    tries = HAND_WRITTEN_TRIES if _affected else REQUESTS  # elsewhere the same race is rarer, yet not impossible
    try:
        _check_count(server, _answers(server, "Count", False, tries), tries)
        _check_count(server, _answers(server, "Count", True), REQUESTS)
    except KnownCrash as crash:
        if _affected:
            raise
        pytest.xfail(f"{BLS_STREAM_WITHOUT_GIL.title}, seen on Python {_pairing.python} too (rarer there): {crash}")
