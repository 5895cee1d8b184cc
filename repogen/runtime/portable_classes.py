"""Classes pickled by value, rebuilt by the server's own standard library: ``namedtuple`` and ``@dataclass``.

repogen/pickling/classes_by_value.py sends such a class as what the user wrote (fields, options, the user's own
methods); the helpers here let this Python's ``collections`` and ``dataclasses`` write the rest again. A payload
names them only where it holds such a class (cloudpickle travels with it then), so only those models carry this
module (emit/vendoring.py: what the payload names).
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any


def _accepted(func: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options this Python's ``func`` knows (``kw_only`` arrived in 3.10, ``doc`` in 3.13, ...)."""
    known = inspect.signature(func).parameters
    return {name: value for name, value in options.items() if name in known}


def make_namedtuple(name: str, fields: tuple[str, ...], defaults: tuple[Any, ...] | None, module: str) -> type:
    """The namedtuple class as this Python's ``collections`` writes it; the user's additions follow."""
    return collections.namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]


def set_class_attributes(cls: type, attributes: Mapping[str, Any]) -> None:
    for name, value in attributes.items():
        setattr(cls, name, value)


def set_dataclass_state(cls: type, state: tuple[Any, Any, Mapping[str, Any]]) -> None:
    """Restore the user's class body, then let this Python's ``dataclasses`` generate the methods again."""
    set_class_state, class_state, spec = state
    set_class_state(cls, class_state)
    for name, options in spec["fields"]:
        setattr(cls, name, dataclasses.field(**_accepted(dataclasses.field, options)))
    dataclasses.dataclass(cls, **_accepted(dataclasses.dataclass, spec["params"]))
