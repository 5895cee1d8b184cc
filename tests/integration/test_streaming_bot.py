"""Cancellation reaches the user's thread: PyTriton's streaming bot (tests/apps/streaming_bot) runs its model's
``generate`` in an executor; when the reader cancels, the stream's generator is closed at its next yield, and with
the one line ``stopping_criteria=[stream_cancelled()]`` its ``generate`` stops at its next token too. Without it,
``generate`` makes every token for nobody. Counted by the models, over gRPC, 100 tokens 20 ms apart cancelled
after 5."""

from __future__ import annotations

import ast
import queue

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

pytestmark = pytest.mark.integration

TOKENS = 100
READ = 5


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("streaming-bot") / "repo"
    cli_build("tests/apps/streaming_bot/app.py:models", repository)
    return serve(repository)


def _stream(server, model: str, n: int, read: int | None = None) -> list[str]:
    """The stream's responses, all of them, or the first ``read`` and then a cancel (the reader leaving)."""
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    got: list[str] = []
    try:
        client.start_stream(callback=lambda result, error: events.put(error if error is not None else result))
        text = grpcclient.InferInput("new_inputs", [1, 1], "BYTES")
        text.set_data_from_numpy(np.array([[b"hi"]], dtype=object))
        count = grpcclient.InferInput("max_tokens", [1, 1], "INT32")
        count.set_data_from_numpy(np.array([[n]], dtype=np.int32))
        client.async_stream_infer(model, [text, count], enable_empty_final_response=True)
        ended = False
        while not ended and (read is None or len(got) < read):
            event = events.get(timeout=60)
            assert not isinstance(event, Exception), f"{event}; server log:\n{server.log_tail()}"
            response = event.get_response()
            if response.outputs:
                got.append(event.as_numpy("response")[0, 0].decode())
            ended = response.parameters["triton_final_response"].bool_param
        client.stop_stream(cancel_requests=not ended)
    finally:
        client.close()
    return got


def _made(server, model: str) -> tuple[int, int]:
    (report,) = _stream(server, model, -1)
    made, after_cancel = ast.literal_eval(report)
    return made, after_cancel


@pytest.mark.parametrize("model", ["Bot", "BotAsIs"])
def test_the_bot_streams_its_tokens(server, model):
    assert _stream(server, model, 3) == ["hi:0", "hi:1", "hi:2"]
    assert _made(server, model) == (3, 0)


def test_a_cancel_stops_generate_with_the_one_line(server):
    assert _stream(server, "Bot", TOKENS, read=READ) == [f"hi:{i}" for i in range(READ)]
    made, after_cancel = _made(server, "Bot")
    print(f"\nBot: {made} tokens made of {TOKENS}, {after_cancel} after the stream was cancelled")
    assert after_cancel <= 1 and made <= READ + 3, (made, after_cancel)
    assert _stream(server, "Bot", 2) == ["hi:0", "hi:1"]  # and the next stream is its own


def test_without_it_generate_makes_every_token_for_nobody(server):
    assert _stream(server, "BotAsIs", TOKENS, read=READ) == [f"hi:{i}" for i in range(READ)]
    made, after_cancel = _made(server, "BotAsIs")
    print(f"\nBotAsIs: {made} tokens made of {TOKENS}, {after_cancel} after the stream was cancelled")
    assert made == TOKENS and after_cancel >= TOKENS - 3 * READ, (made, after_cancel)
