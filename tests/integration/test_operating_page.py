"""docs/operating.md, run as a reader runs it: every shell block's commands, each with the output the page shows
after it (the page's ```text blocks), on the real server; the page's Python blocks are excerpts of the app served
here (tests/unit/docs/test_readme_snippets.py checks that). Paths and ports are this run's; nothing else is changed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from serve_cli import ServeProcess, cli_env, repogen

from repogen.testing.otlp import OtlpReceiver

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operating.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
BUILT = "build/operating"


def blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block of the page, in order."""
    return FENCE.findall(PAGE.read_text(encoding="utf-8"))


def shown_after(command: str) -> str:
    """The text block after the shell block holding ``command``: what the page says it prints."""
    found = blocks()
    for index, (language, text) in enumerate(found):
        if language == "sh" and command in text:
            following = found[index + 1]
            assert following[0] == "text", f"no output shown after {command!r}"
            return following[1]
    raise AssertionError(f"docs/operating.md shows no {command!r}")


def commands() -> list[str]:
    return [line for language, text in blocks() if language == "sh" for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The page's build, into this run's directory instead of build/operating."""
    out = tmp_path_factory.mktemp("operating") / "operating"
    (line,) = [c for c in commands() if c.startswith("repogen build ")]
    done = repogen(*line.split()[1:-1], str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_inspect_shows_what_the_page_shows(built):
    (line,) = [c for c in commands() if c.startswith("repogen inspect ")]
    done = repogen(*line.replace(BUILT, str(built)).split()[1:])
    assert done.returncode == 0, done.stderr
    assert shown_after("repogen inspect ") in done.stdout


@pytest.fixture(scope="module")
def served(built, triton_install):
    """The page's `repogen serve` line, its trace endpoint this test's receiver and its ports free ones."""
    (line,) = [c for c in commands() if c.startswith("repogen serve ")]
    words = line.replace(BUILT, str(built)).split()
    with OtlpReceiver() as receiver:
        words[words.index("--trace-endpoint") + 1] = receiver.url
        env = cli_env(OTEL_BSP_SCHEDULE_DELAY="200")  # tritonserver's spans every 0.2 s, not 5
        serve = ServeProcess(words[2], triton_install, *words[3:], env=env)
        try:
            serve.wait_for("Press Ctrl\\+C to stop")
            yield serve, receiver
        finally:
            assert serve.stop() == 0


def test_the_client_prints_what_the_page_shows(served):
    serve, _ = served
    (line,) = [c for c in commands() if c.startswith("python examples/operating/client.py")]
    line = line.replace(":8000", f":{serve.http}").replace(":8002", f":{serve.metrics}")
    done = subprocess.run([sys.executable, *line.split()[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown_after("python examples/operating/client.py")
    assert "tritonserver options the models depend on: --cache-config=local,size=16777216 " in serve.output()


def test_the_quote_is_one_trace_with_its_bls_call_and_the_callables_spans(served):
    _, receiver = served

    def quote_trace(spans):
        roots = [s for s in spans if s.name == "Quote" and s.scope != "repogen"]
        return [s for s in spans if roots and s.trace_id == roots[0].trace_id]

    spans = {s.name: s for s in quote_trace(receiver.wait_for(lambda spans: {"Quote", "Price", "quote"} <= {
        s.name for s in quote_trace(spans)}))}  # fmt: skip
    assert spans["Price"].parent_id == spans["quote"].parent_id == spans["Quote"].span_id


def test_a_server_without_them_logs_the_line_the_page_shows(built, serve):
    shown = next(text for language, text in blocks() if language == "text" and "was started without" in text)
    server = serve(built)  # a plain tritonserver: none of the options
    assert shown.strip().removesuffix(" ...") in server.log_path.read_text(errors="replace")


def test_deploy_writes_what_the_page_shows(built):
    (line,) = [c for c in commands() if c.startswith("repogen deploy ")]
    done = repogen(*line.replace(BUILT, str(built)).split()[1:], env=cli_env())
    assert done.returncode == 0, done.stderr
    assert shown_after("repogen deploy ") in done.stdout
