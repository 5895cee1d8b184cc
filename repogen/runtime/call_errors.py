"""What a call to another model through BLS raises in the caller: the called model's error, with its code, and a
timeout (runtime/bls.py raises them; ``repogen.local`` too, as a client would).

A model carries this module where it holds a BLS client (bls.py imports it) or its payload names one of these
(``except ModelCallError:`` in the user's code); runtime/errors.py keeps what every model may raise.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import CODES, INTERNAL, UNAVAILABLE, InferenceError


class ModelCallError(InferenceError):
    """A model called through BLS answered with an error; its message is carried to the caller's client.

    :attr:`code` is the code the called model answered with (INTERNAL where the release lost it and the message
    does not say it: :func:`answered_code`), so that re-raising it answers the caller's client with that code;
    :attr:`model` names the called model. Both survive a re-raise and pickling.
    """

    def __init__(self, message: str, code: str | None = None, model: str = ""):
        super().__init__(message, code=code)
        self.model = model

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.code, self.model))


class ModelCallTimeout(ModelCallError, TimeoutError):
    """A model called through BLS did not answer within the call's timeout (``handle.timeout(seconds)``).

    Its code is UNAVAILABLE, what Triton answers a request whose queue timeout expired; the called model may
    still be running (python_backend cannot stop it), and its late answer is dropped.
    """

    def __init__(self, message: str, code: str | None = UNAVAILABLE, model: str = ""):
        super().__init__(message, code, model)


# "NegativeInput [INVALID_ARG]: " at the start of a message, as runtime/failures.py's error_message writes it, after
# "in ensemble 'E', " where an ensemble's step answered it (Triton core's prefix)
_CODE_SAID = re.compile(r"(?:in ensemble '[^']*', )*[A-Za-z_][\w.]* \[(" + "|".join(CODES) + r")\]: ")


def answered_code(backend: Any, error: Any) -> str:
    """The code of an error a called model answered (a BLS response's ``error()``): the error's own where the
    release kept it (python_backend r25.04+), else the one its message starts with (runtime/failures.py's
    ``error_message``), else INTERNAL."""
    try:
        code = error.code()
    except Exception:  # a release without codes
        code = None
    for name in CODES:
        if name != INTERNAL and code is not None and code == getattr(backend.TritonError, name, None):
            return name
    try:
        said = _CODE_SAID.match(error.message())
    except Exception:
        said = None
    return said.group(1) if said else INTERNAL
