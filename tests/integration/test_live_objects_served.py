"""Live objects made anew on the stock server: PyTriton's dialogpt-shaped bot (tests/apps/live/app.py).

The bot holds a lock, a condition over it, an event, a queue, a streamer with a queue inside and a
ThreadPoolExecutor(max_workers=2, thread_name_prefix="bot"), all in their initial state at build time.
The server makes each anew with the same settings: the producer runs on the executor's threads (named
with the prefix, never more than two), the consumer iterates the streamer's queue, the condition is
still over the bot's own lock. Both models hold the one bot: the build warns, and each model's copy
counts its own requests.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer, stream

pytestmark = pytest.mark.integration

APP = "tests/apps/live/app.py:models"


@pytest.fixture(scope="module")
def built(cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("live") / "repo"
    return repo, cli_build(APP, repo)


@pytest.fixture(scope="module")
def server(serve, built):
    return serve(built[0])


def test_the_build_lists_what_it_made_anew_and_warns_of_the_shared_bot(built):
    repo, result = built
    assert (
        "  model 'Bot': concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix='bot') at infer_func "
        "-> method self -> attribute '_executor'" in result.stdout
    )
    assert (
        "  model 'BotStream': queue.Queue(maxsize=0) at infer_func -> attribute 'streamer' -> attribute 'text_queue'"
        in result.stdout
    )
    assert (
        "model 'Bot' (at infer_func -> method self) and model 'BotStream' (at infer_func) both hold one "
        "app.StreamingBot object: in the server each model gets its own copy" in result.stderr
    )
    recorded = json.loads((repo / "Bot" / "1" / "model.json").read_text())["made_anew"]
    assert [entry["object"] for entry in recorded] == [
        "threading.Lock()",
        "threading.Condition(threading.Lock())",
        "threading.Event()",
        "queue.Queue(maxsize=8)",
        "queue.Queue(maxsize=0)",
        "concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix='bot')",
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_executor_streamer_lock_and_condition_work_in_the_server(server, protocol):
    text = np.array([[b"hello live world"], [b"two words"]], dtype=object)
    first = infer(protocol, server, "Bot", {"text": text})
    assert first["reply"][:, 0].tolist() == [b"HELLO LIVE WORLD", b"TWO WORDS"]
    assert all(name.startswith(b"bot_") for name in first["thread"][:, 0])
    pool = first["pool"][0, 0].decode().split(",")
    assert len(pool) == 2 and all(name.startswith("bot_") for name in pool)  # max_workers kept: 4 tasks, 2 threads
    assert first["max_workers"].tolist() == [[2], [2]]
    assert first["same_lock"].tolist() == [[True], [True]]
    second = infer(protocol, server, "Bot", {"text": np.array([[b"again"]], dtype=object)})
    assert second["served"][0, 0] == first["served"][0, 0] + 1


def test_the_decoupled_bot_streams_from_its_own_copy(server):
    """Whatever 'Bot' has served, the stream's bot counts from 1: each model holds its own copy."""
    infer("http", server, "Bot", {"text": np.array([[b"first"]], dtype=object)})
    responses = stream(server, "BotStream", {"text": np.array([[b"one two three"]], dtype=object)})
    assert [r["token"].tolist() for r in responses] == [[[b"ONE"]], [[b"TWO"]], [[b"THREE"]]]
    assert {int(r["served"][0, 0]) for r in responses} == {1}
    again = stream(server, "BotStream", {"text": np.array([[b"four"]], dtype=object)})
    assert [(r["token"].tolist(), int(r["served"][0, 0])) for r in again] == [([[b"FOUR"]], 2)]


def test_built_by_python_3_13_the_servers_python_makes_them(builder, serve, tmp_path_factory):
    """On 3.13 ``threading.Lock`` is a class, a function before: the payload names it, the server's 3.10 makes it."""
    repo = tmp_path_factory.mktemp("live-3.13") / "repo"
    builder("3.13", APP, repo)
    server = serve(repo)
    out = infer("grpc", server, "Bot", {"text": np.array([[b"made anew"]], dtype=object)})
    assert out["reply"].tolist() == [[b"MADE ANEW"]] and out["same_lock"].tolist() == [[True]]
    assert out["thread"][0, 0].startswith(b"bot_") and out["max_workers"].tolist() == [[2]]
