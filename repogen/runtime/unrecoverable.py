"""``PyTritonUnrecoverableError``: the instance that raised it stops serving, and the whole server stops.

PyTriton's contract: the error responses go out, then tritonserver shuts down so that its supervisor (a Kubernetes
Deployment, ``docker run --restart``) starts a fresh one; meanwhile this instance answers every request with that
error. Only a model whose code can raise it carries this module: emit/vendoring.py carries it where the payload or
the shipped sources name the error (or package trees ship, or the payload refers to ``repogen`` itself), and the
runtime imports it only once the error was raised (runtime/responses.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import triton_python_backend_utils as pb_utils

from .contract import Stub
from .errors import UNAVAILABLE
from .failures import error_message, error_response, log

# The error responses of an unrecoverable error leave before the server is told to stop (it drains
# requests in flight anyway; the delay keeps the order obvious in the log).
UNRECOVERABLE_SHUTDOWN_DELAY_S = 0.5


def stop(model: Any, exc: BaseException) -> None:
    """``model`` (a ``Responses``) stops serving after ``exc``, and asks its server to stop."""
    model.stopped = error_message(exc)
    model.batch_call = None  # the specialized execute leaves for the general one, which refuses
    stop_server(model._stub, model._model, model.stopped, log, model._unstoppable)


def stop_server(stub: Stub | None, model: str, stopped: str, log: Callable[[str, str], None], why: str | None) -> None:
    """PyTriton's contract: the error responses go out, then the whole server shuts down gracefully.

    SIGTERM makes tritonserver stop taking requests, finish those in flight, unload every model and
    exit, so that its supervisor (a Kubernetes Deployment, ``docker run --restart``) starts a fresh
    one. ``why``: the server cannot be found (``runtime.internals`` said so at load); then only this
    instance stops answering, and the log says so. Outside a server (``repogen.local``) nothing is logged.
    """
    if stub is None:
        if why is not None:
            log("log_error", f"model '{model}': {stopped}; {why}, so this instance answers every request with that")
        return
    if not stub.server_alive():
        log(
            "log_error",
            f"model '{model}': {stopped}; tritonserver (pid {stub.server_pid}) cannot be signalled, ending this "
            "instance's stub instead",
        )
        threading.Timer(UNRECOVERABLE_SHUTDOWN_DELAY_S, os._exit, (1,)).start()
        return
    log(
        "log_error",
        f"model '{model}': {stopped}; shutting tritonserver (pid {stub.server_pid}) down with SIGTERM, as PyTriton "
        "does, so that its supervisor restarts it",
    )
    timer = threading.Timer(UNRECOVERABLE_SHUTDOWN_DELAY_S, stub.stop_server)
    timer.daemon = True
    timer.start()


def refuse(model: Any, requests: list[Any]) -> list[Any] | None:
    """After an unrecoverable error ``model`` answers nothing but that, until the server is gone."""
    after = "the server is shutting down" if model._stub is not None else "this instance answers nothing else"
    message = f"PyTritonUnrecoverableError: model '{model._model}' stopped serving after {model.stopped}; {after}"
    # UNAVAILABLE: another instance, or the server its supervisor starts next, will serve it
    errors = [error_response(message, UNAVAILABLE) for _ in requests]  # one each (Responses.failures says why)
    if model._failures is not None:
        model._failures.add(len(requests))
    if not model._decoupled:
        return errors
    for request, error in zip(requests, errors, strict=True):
        request.get_response_sender().send(error, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    return None
