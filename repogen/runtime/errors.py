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
    """A model called through BLS answered with an error; its message is carried to the caller's client."""
