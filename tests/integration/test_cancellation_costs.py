"""What a cancelled stream still costs: tokens made after the server saw the cancellation, generated vs
hand-written without polling vs hand-written polling after every token (tests/repos/cancel_handwritten).

The same 200-token stream, 20 ms apart, cancelled over gRPC after 5 tokens; each model counts for itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_cancellation_served import READ, TOKENS, _read_then_cancel, _report

pytestmark = pytest.mark.integration

HANDWRITTEN = Path(__file__).resolve().parents[1] / "repos" / "cancel_handwritten"


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    root = tmp_path_factory.mktemp("cancel-costs")
    shutil.copytree(HANDWRITTEN, root / "handwritten", ignore=shutil.ignore_patterns("*.md"))
    cli_build("tests/apps/cancel/app.py:models", root / "generated")
    return serve(root / "generated", extra_args=(f"--model-repository={root / 'handwritten'}",))


def test_tokens_made_after_a_cancellation(server):
    made = {}
    for model in ("Tokens", "HandPolling", "HandTokens"):
        assert _read_then_cancel(server, model) == list(range(READ))
        made[model] = _report(server, model)  # served after the cancelled stream's execute returned
    print(f"\ntokens made after the cancellation (of {TOKENS}, cancelled after {READ}): {made}")
    assert made["Tokens"]["after_cancel"] <= 1 and made["Tokens"]["closed"] == 1
    assert made["HandPolling"]["after_cancel"] <= 1 and made["HandPolling"]["closed"] == 1
    assert made["HandTokens"]["produced"] == TOKENS  # without polling, all of it: the issue this fixes
    assert made["HandTokens"]["after_cancel"] >= TOKENS - 3 * READ
