"""The error-code model without a server (tests/integration/test_error_codes_served.py proves it on every pairing): each
exception's code, the message that says it, a BLS caller reading it back, and a wrong request failing alone."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import (
    InferenceError,
    InvalidArgumentError,
    ModelCallError,
    ModelConfig,
    NotFoundError,
    PyTritonBadParameterError,
    PyTritonError,
    Repository,
    Tensor,
    UnavailableError,
    batch,
)
from repogen.local import backend_shim
from repogen.runtime.call_errors import answered_code
from repogen.runtime.errors import CODES, INTERNAL, error_code
from repogen.triton.error_codes import GRPC_STATUS, HTTP_STATUS, http_status

backend_shim.install()
from repogen.runtime.failures import error_message  # noqa: E402  (imports the backend, the shim here)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (InvalidArgumentError("x"), "INVALID_ARG"),
        (PyTritonBadParameterError("x"), "INVALID_ARG"),
        (NotFoundError("x"), "NOT_FOUND"),
        (UnavailableError("x"), "UNAVAILABLE"),
        (InferenceError("x"), INTERNAL),
        (InferenceError("x", code="UNAVAILABLE"), "UNAVAILABLE"),
        (ValueError("x"), INTERNAL),
        (KeyboardInterrupt(), INTERNAL),
    ],
)
def test_each_exception_answers_with_its_code(exc, code):
    assert error_code(exc) == code


def test_pytriton_names_stay_what_pytriton_users_catch():
    error = PyTritonBadParameterError("bad x")
    assert isinstance(error, PyTritonError) and isinstance(error, InvalidArgumentError)
    assert error.message == "bad x"


def test_an_unknown_code_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="error code 'BAD_REQUEST' is not one of Triton's: INTERNAL, INVALID_ARG"):
        InferenceError("x", code="BAD_REQUEST")


def test_the_message_says_the_code_after_the_type():
    class NegativeInput(InvalidArgumentError):
        pass

    assert error_message(NegativeInput("x < 0")) == "NegativeInput [INVALID_ARG]: x < 0"
    assert error_message(ValueError("x < 0")) == "ValueError: x < 0"  # INTERNAL says nothing more
    assert error_message(UnavailableError()) == "UnavailableError [UNAVAILABLE]"


class _Error:
    def __init__(self, message: str, code: object = "INTERNAL"):
        self._message, self._code = message, code

    def message(self) -> str:
        return self._message

    def code(self) -> object:
        return self._code


@pytest.mark.parametrize(
    ("message", "native", "code"),
    [
        ("NegativeInput [INVALID_ARG]: x < 0 (at app.py:3, in f)", "INTERNAL", "INVALID_ARG"),  # r25.03 and older
        ("x < 0", "NOT_FOUND", "NOT_FOUND"),  # r25.04 and later keep the code
        ("in ensemble 'E', UnavailableError [UNAVAILABLE]: down", "INTERNAL", "UNAVAILABLE"),
        ("in ensemble 'E', in ensemble 'F', NotFoundError [NOT_FOUND]: no", "INTERNAL", "NOT_FOUND"),
        ("ValueError: said NegativeInput [INVALID_ARG]: inside", "INTERNAL", INTERNAL),  # not where a code is said
        ("ValueError: a bug", "INTERNAL", INTERNAL),
    ],
)
def test_a_caller_reads_the_code_its_model_answered(message, native, code):
    assert answered_code(backend_shim, _Error(message, native)) == code


def test_the_release_decides_what_http_says():
    assert [http_status(c, "23.12") for c in CODES] == [400] * len(CODES)  # 2.41 answers every error 400
    assert http_status("INVALID_ARG", "24.01") == 400 and http_status("UNAVAILABLE", "24.10") == 503
    assert http_status(INTERNAL, "24.10") == 500 and set(HTTP_STATUS) == set(GRPC_STATUS) == set(CODES)


X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]


def _repository() -> Repository:
    models = Repository()

    @models.model("Checked", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=4))
    @batch
    def checked(x):
        if (x < 0).any():
            raise InvalidArgumentError("x must be >= 0")
        if (x == 503).any():
            raise UnavailableError("down")
        return {"y": x * 2}

    @models.model("Forward", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=4))
    @batch
    def forward(x):
        return {"y": checked(x=x)["y"]}

    return models


def test_in_process_calls_carry_the_code_through_bls_and_a_re_raise():
    local = _repository().local()
    with pytest.raises(ModelCallError) as caught:
        local.infer("Forward", {"x": np.array([[-1.0]], dtype=np.float32)})
    assert caught.value.code == "INVALID_ARG" and caught.value.model == "Forward"
    assert str(caught.value).startswith(
        "model 'Forward' failed: ModelCallError [INVALID_ARG]: model 'Checked' failed: InvalidArgumentError "
        "[INVALID_ARG]: x must be >= 0"
    )


def test_only_the_wrong_request_of_a_batch_fails():
    local = _repository().local()
    instance = local._instance(local.spec.model("Checked"))
    requests = [
        backend_shim.InferenceRequest([backend_shim.Tensor("x", np.array([[v]], dtype=np.float32))])
        for v in (1.0, -1.0, 2.0)
    ]
    answers = instance.execute(requests)
    assert [a.has_error() for a in answers] == [False, True, False]
    assert answers[1].error().code() == "INVALID_ARG"
    assert [a.output_tensors()[0].as_numpy().tolist() for a in (answers[0], answers[2])] == [[[2.0]], [[4.0]]]
    assert len({id(a) for a in answers}) == 3


def test_a_batch_failed_whole_gets_one_response_object_each():
    local = _repository().local()
    instance = local._instance(local.spec.model("Checked"))
    requests = [
        backend_shim.InferenceRequest([backend_shim.Tensor("x", np.array([[503.0]], dtype=np.float32))])
        for _ in range(3)
    ]
    answers = instance.execute(requests)
    assert [a.error().code() for a in answers] == ["UNAVAILABLE"] * 3
    assert len({id(a) for a in answers}) == 3 and len({id(a.error()) for a in answers}) == 3
