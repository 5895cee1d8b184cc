"""Exceptions a served callable can raise to steer how the runtime answers."""


class InferenceError(Exception):
    """A request-level failure: the client receives the message, the model keeps serving."""


class PyTritonUnrecoverableError(Exception):
    """The model cannot continue: the runtime fails the request and asks the stub to exit.

    Named after PyTriton's exception of the same purpose so migrated code keeps working.
    """


class PayloadError(RuntimeError):
    """The model's pickled payload cannot be loaded safely (hash, version or import mismatch)."""


class ModelCallError(InferenceError):
    """A model called through BLS answered with an error; its message is carried to the caller's client.

    ``code`` is the called model's error code as python_backend names it (``pb_utils.TritonError``'s ``"INTERNAL"``,
    ``"INVALID_ARG"``, ``"UNAVAILABLE"``, ``"NOT_FOUND"``, ``"UNSUPPORTED"``, ``"ALREADY_EXISTS"``, ``"CANCELLED"``,
    ``"UNKNOWN"``), None where the error said none; ``model`` the model called. Both survive a re-raise and pickling.
    """

    def __init__(self, message: str, code: str | None = None, model: str | None = None):
        super().__init__(message)
        self.code = code
        self.model = model

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.code, self.model))


class ModelCallTimeout(ModelCallError, TimeoutError):
    """A model called through BLS did not answer within the call's timeout (``handle.timeout(seconds)``).

    Its code is ``"UNAVAILABLE"``, what Triton answers a request whose queue timeout expired; the called model may
    still be running (python_backend cannot stop it), and its late answer is dropped.
    """

    def __init__(self, message: str, code: str | None = "UNAVAILABLE", model: str | None = None):
        super().__init__(message, code, model)
