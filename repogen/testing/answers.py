"""Served answers against answers computed elsewhere: exact where the arithmetic is exact, within float error
where it is not.

A model's floats computed by the builder's numpy (2.x, its own OpenBLAS) and by the server's (1.26.4, another
OpenBLAS) go through different kernels: a matrix product or a reduction sums in another order on a machine
with AVX-512 than on one without, and the two differ in their last bits. Seen on an Intel Xeon with AVX-512
(2026-11-29): a softmax score near 0.015 off by 1.1e-7 (7.5e-6 relative), a pipeline's float off by 3e-8. Such
differences scale with the largest magnitudes summed, not with the value itself, so a relative tolerance alone
fails near zero: floats here are compared within ``ULPS`` units of their dtype's precision, relative to the value
and to the tensor's largest magnitude. Integers, booleans and BYTES must match exactly, and so must dtypes and
shapes; a wrong answer is off by far more than this.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["ULPS", "assert_answers_match", "assert_floats_close"]

ULPS = 32
"""Units of the dtype's precision a float may differ by (float32: 3.8e-6), of itself or of its tensor's largest
magnitude: a few sums of a handful of terms through another BLAS differ by a few units, a bug by many more."""


def assert_floats_close(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """``actual`` equals ``expected`` as the same float arithmetic through another BLAS would give it."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if actual.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    eps = float(np.finfo(expected.dtype).eps)
    finite = np.abs(expected[np.isfinite(expected)])
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=ULPS * eps, atol=ULPS * eps * scale, err_msg=what)


def assert_answers_match(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], what: str) -> None:
    """Every output of ``expected`` and no other: BYTES and integers equal, floats as :func:`assert_floats_close`."""
    assert sorted(actual) == sorted(expected), f"{what}: outputs {sorted(actual)}, expected {sorted(expected)}"
    for name, want in expected.items():
        got = actual[name]
        if want.dtype == object:
            assert got.tolist() == want.tolist(), f"{what} {name}"
        else:
            assert_floats_close(got, want, f"{what} {name}")
