"""The decorators live in several runtime modules; the names users import stay where they were."""

from __future__ import annotations

import pickle
import pickletools

import numpy as np
import pytest

import repogen
import repogen.runtime
import repogen.runtime.decorators as decorators

PUBLIC = [
    "ConstantPadder",
    "batch",
    "fill_optionals",
    "first_value",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "triton_context",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_names_are_the_same_objects_everywhere(name: str) -> None:
    assert getattr(repogen, name) is getattr(repogen.runtime, name) is getattr(decorators, name)
    assert name in decorators.__all__ and name in repogen.runtime.__all__ and name in repogen.__all__
    assert getattr(decorators, name).__module__.startswith("repogen.runtime.")


def test_decorated_functions_pickle_by_reference_to_the_vendored_runtime() -> None:
    stack = repogen.fill_optionals(x=np.zeros(1, np.float32))(
        repogen.group_by_keys(repogen.batch(repogen.group_by_values("x")(repogen.first_value("x")(np.negative))))
    )
    data = pickle.dumps(stack, protocol=4)
    strings = {arg for op, arg, _ in pickletools.genops(data) if isinstance(arg, str)}
    assert {"repogen.runtime.request_decorators", "repogen.runtime.batch_decorators"} <= strings
    assert "repogen.runtime.context_decorators" in strings
    assert type(pickle.loads(data)) is type(stack)
