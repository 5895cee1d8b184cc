"""`repogen serve` is option parsing plus `Serving(ServeOptions(...)).run()`: the options are the command's, with its
defaults, and a contradiction is named before anything is built, installed or started (no server needed)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest

from repogen.commands.serve import serve
from repogen.errors import ServeError, UsageError
from repogen.server.running.serve_options import EXIT_TIMEOUT, ServeOptions
from repogen.server.running.serving import Serving
from repogen.triton.releases import get_release

QUICKSTART = Path(__file__).resolve().parents[2] / "golden" / "quickstart" / "expected"


def test_the_command_takes_the_options_with_their_defaults() -> None:
    fields = {field.name for field in dataclasses.fields(ServeOptions)}
    assert {param.name for param in serve.params if not getattr(param, "hidden", False)} == fields
    parsed = serve.make_context("serve", [str(QUICKSTART)]).params
    assert ServeOptions(**parsed) == ServeOptions(str(QUICKSTART))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reload": True}, "--reload, --output and --app-dir rebuild from an app; '{target}' is a directory."),
        ({"control": "none", "models": ("AddSub",)}, "--reload and --model load models explicitly;"),
        ({"image": "x", "embedded": True}, "--image serves in that container image, with its own tritonserver"),
        ({"image": "x", "triton_release": get_release("24.10")}, "--triton-release, --server-python and --embedded"),
        ({"tritonserver_args": ("--http-port=1",)}, "repogen serve sets --http-port itself; use --http-port instead."),
        ({"models": ("AddSub",), "tritonserver_args": ("--load-model=x",)}, "use --model NAME instead."),
    ],
)
def test_a_contradiction_is_named_before_anything_starts(
    options: dict[str, object], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UsageError, match=message.format(target=QUICKSTART).replace("(", r"\(").replace("?", r"\?")):
        Serving(ServeOptions(QUICKSTART, **options))  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_an_app_with_a_verify_key_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "key.pub"
    key.write_text("")
    with pytest.raises(UsageError, match="--verify-key checks a built, signed repository; 'app.py:models' is an app"):
        Serving(ServeOptions("app.py:models", verify_key=key))


def test_the_server_arguments_serve_sets() -> None:
    assert ServeOptions(QUICKSTART).server_arguments(["AddSub"]) == ["--exit-on-error=false", EXIT_TIMEOUT]
    explicit = ServeOptions(QUICKSTART, models=("AddSub",), tritonserver_args=("--exit-timeout-secs=9", "--x=1"))
    assert explicit.server_arguments(["AddSub"]) == [
        "--exit-on-error=false", "--model-control-mode=explicit", "--load-model=AddSub", "--exit-timeout-secs=9",
        "--x=1",
    ]  # fmt: skip


def test_nothing_answers_before_start(tmp_path: Path) -> None:
    serving = Serving(ServeOptions(QUICKSTART))
    status = serving.status()
    assert not status.running and status.pid is None and status.models == ()
    for call in (serving.reload, serving.poll, serving.banner):
        with pytest.raises(ServeError, match="is not served: call start\\(\\) first"):
            call()
    serving.stop()  # nothing started: nothing to do
