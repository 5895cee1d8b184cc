"""Load and unload one model on a running server (``repogen load``/``unload``): Triton's explicit model control.

The server must run with ``--model-control-mode=explicit`` (``repogen serve --model-control-mode explicit``,
``--model NAME`` or ``--reload``); otherwise Triton refuses with a message about polling that does not say
what to do, so the error here does. A name the repository does not hold gets the close match from the
repository index before anything is asked of the server; a model that fails to load gets the server's reason
in one line (its traceback stays in the server log).
"""

from __future__ import annotations

import difflib
import time

from ...errors import ModelControlError
from ...triton.endpoints import NOT_EXPLICIT_ANSWER
from .infer import ModelClient
from .states import ModelState, model_states, reason_line

__all__ = ["ModelControlError", "load_model", "unload_model"]

_SETTLED = ("READY", "UNAVAILABLE", "")


def load_model(
    name: str, *, url: str | None = None, protocol: str = "http", timeout: float = 60.0, token: str | None = None
) -> ModelState:
    """Load (or reload) ``name`` from the server's repository; its state once READY."""
    return _control("load", name, url, protocol, timeout, token)


def unload_model(
    name: str, *, url: str | None = None, protocol: str = "http", timeout: float = 60.0, token: str | None = None
) -> ModelState:
    """Unload ``name``; its state once the server has finished unloading it (UNAVAILABLE)."""
    return _control("unload", name, url, protocol, timeout, token)


def _control(action: str, name: str, url: str | None, protocol: str, timeout: float, token: str | None) -> ModelState:
    with ModelClient(protocol, url, token) as client:
        client.check_live()
        _require_known(name, model_states(client.index()), client.url)
        call = getattr(client.client, f"{action}_model")
        try:  # HTTP waits the client's network timeout (60 s), gRPC the one given
            call(name) if protocol == "http" else call(name, client_timeout=timeout)
        except client.errors as exc:
            client.check_refused(exc)
            message = exc.message() or str(exc)
            if str(exc.status()) == "StatusCode.DEADLINE_EXCEEDED":
                raise _no_answer(action, name, client.url, message) from exc
            if NOT_EXPLICIT_ANSWER in message:
                raise ModelControlError(
                    f"the server at {client.url} does not load or unload models on request; it answered {message!r} "
                    "(it runs without --model-control-mode=explicit). Serve with `repogen serve DIR "
                    "--model-control-mode explicit` (or --model NAME), or start tritonserver with "
                    "--model-control-mode=explicit."
                ) from exc
            if action == "load":
                kept = _settled(client, name, time.monotonic() + timeout).state == "READY"
                raise ModelControlError(
                    f"model {name!r} failed to load: {reason_line(message)}. The server log has the traceback"
                    f"{'; the server still serves the version loaded before' if kept else ''}. Fix the model and "
                    f"run `repogen load {name}` again."
                ) from exc
            raise ModelControlError(f"model {name!r} could not be unloaded: {message}") from exc
        except Exception as exc:  # no answer in time: a socket timeout (HTTP)
            raise _no_answer(action, name, client.url, f"{type(exc).__name__}: {exc}") from exc
        return _settled(client, name, time.monotonic() + timeout)


def _no_answer(action: str, name: str, url: str, what: str) -> ModelControlError:
    return ModelControlError(
        f"the server at {url} did not answer the {action} of model {name!r} in time ({what}); its log says what it "
        "waits for. A server that never answers must be restarted."
    )


def _require_known(name: str, states: list[ModelState], url: str) -> None:
    names = sorted({s.name for s in states})
    if name in names:
        return
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ModelControlError(
        f"the server at {url} has no model {name!r} in its repository.{hint} Its models: {', '.join(names) or 'none'}."
    )


def _settled(client: ModelClient, name: str, deadline: float) -> ModelState:
    """The model's state once it is no longer LOADING/UNLOADING (Triton may answer before an unload completes)."""
    while True:
        state = next((s for s in model_states(client.index()) if s.name == name), ModelState(name, "", "", ""))
        if state.state in _SETTLED or time.monotonic() > deadline:
            return state
        time.sleep(0.05)
