"""repogen.testing.answers: what another BLAS changes passes, a wrong answer does not."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.answers import assert_answers_match, assert_floats_close


def test_another_summation_order_passes_near_zero():
    """The AVX-512 machine's case: a score of 0.0147 off by 1.1e-7 in a tensor whose largest value is ~1."""
    expected = np.array([[0.98, 0.0147, 0.0053]], np.float32)
    served = expected + np.array([[0, 1.1e-7, -3e-8]], np.float32)
    assert_floats_close(served, expected, "scores")


@pytest.mark.parametrize("off", [1e-4, -2e-5])
def test_a_wrong_float_fails(off):
    expected = np.array([0.5, 1.0, 0.25], np.float32)
    with pytest.raises(AssertionError, match="scores"):
        assert_floats_close(expected + np.float32(off), expected, "scores")


def test_dtype_shape_and_integers_are_exact():
    with pytest.raises(AssertionError, match="dtype float64, expected float32"):
        assert_floats_close(np.zeros(2), np.zeros(2, np.float32), "y")
    with pytest.raises(AssertionError, match="shape"):
        assert_floats_close(np.zeros((1, 2), np.float32), np.zeros(2, np.float32), "y")
    with pytest.raises(AssertionError):
        assert_floats_close(np.array([3], np.int64), np.array([4], np.int64), "n")


def test_answers_match_names_bytes_and_outputs():
    expected = {"label": np.array([[b"a"]], dtype=object), "p": np.array([[0.5]], np.float32)}
    assert_answers_match({"label": np.array([[b"a"]], dtype=object), "p": np.array([[0.5]], np.float32)}, expected, "m")
    with pytest.raises(AssertionError, match="m label"):
        assert_answers_match({**expected, "label": np.array([[b"b"]], dtype=object)}, expected, "m")
    with pytest.raises(AssertionError, match="outputs"):
        assert_answers_match({"p": expected["p"]}, expected, "m")
