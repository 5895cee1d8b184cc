"""Classes whose methods the standard library writes: rebuilt by the server's own library.

``@dataclass`` and ``namedtuple``/``typing.NamedTuple`` generate methods with ``exec`` (no source
file to ship) or take them from the building Python's standard library (``reprlib``,
``dataclasses._replace`` on 3.13, which 3.10 lacks), and their bookkeeping objects
(``__dataclass_params__``, ``Field``) have different slots on each Python. So such a class
travels as what the user wrote (fields, options, the user's own methods) and the server's
``dataclasses``/``collections`` generate the rest again.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import linecache
import os
import re
import sysconfig
import types
from typing import Any

from cloudpickle import cloudpickle as _cp

from ..runtime import portable_classes

_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
# Class attributes only some Pythons write (3.13); the server's Python sets its own.
_PYTHON_SPECIFIC = ("__firstlineno__", "__static_attributes__")
_SUNDER = re.compile(r"^_[a-z][a-z_]*[a-z]_$")  # _use_args_, _new_member_, _value_repr_ ... (enum's bookkeeping)
_AUTO_ENUM_DOC = (None, "An enumeration.")
_PARAMS = ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only")
_FIELD_OPTIONS = ("init", "repr", "hash", "compare", "kw_only")


def generated(value: Any) -> bool:
    """A method written by the standard library rather than by the user."""
    func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    if not isinstance(func, types.FunctionType):
        return False
    filename = func.__code__.co_filename
    if os.path.isabs(filename) and os.path.isfile(filename):
        return os.path.realpath(filename).startswith(_STDLIB)
    return not linecache.getlines(filename)


def reduce_class(cls: type) -> Any:
    """How a class pickled by value travels, with nothing in it that only the building Python writes."""
    if issubclass(cls, tuple) and "_fields" in cls.__dict__ and "_make" in cls.__dict__:
        return _namedtuple_reduce(cls)
    if "__dataclass_fields__" in cls.__dict__ and "__dataclass_params__" in cls.__dict__:
        return _dataclass_reduce(cls)
    make, args, (attributes, slots), *rest = _cp._dynamic_class_reduce(cls)
    attributes = {k: v for k, v in attributes.items() if k not in _PYTHON_SPECIFIC}
    if issubclass(cls, enum.Enum):
        attributes = {k: v for k, v in attributes.items() if not _written_by_enum(k, v)}
    return make, args, (attributes, slots), *rest


def _written_by_enum(name: str, value: Any) -> bool:
    """What the Enum metaclass of the building Python set, which the server's sets again (differently)."""
    if name == "__doc__":
        return value in _AUTO_ENUM_DOC
    if name == "__new__":
        return getattr(value, "__module__", None) == "enum"
    return bool(_SUNDER.match(name)) and not (isinstance(value, types.FunctionType) and not generated(value))


def _namedtuple_reduce(cls: type) -> Any:
    fields = tuple(cls._fields)  # type: ignore[attr-defined]
    given = cls._field_defaults  # type: ignore[attr-defined]
    defaults = tuple(given[f] for f in fields if f in given) or None
    reference = collections.namedtuple(cls.__name__, fields, defaults=defaults, module=cls.__module__)  # type: ignore[misc]
    extras = {k: v for k, v in cls.__dict__.items() if k not in reference.__dict__ and k not in _PYTHON_SPECIFIC}
    extras["__qualname__"] = cls.__qualname__
    if cls.__doc__ != reference.__doc__:
        extras["__doc__"] = cls.__doc__
    args = (cls.__name__, fields, defaults, cls.__module__)
    return portable_classes.make_namedtuple, args, extras, None, None, portable_classes.set_class_attributes


def _dataclass_reduce(cls: type) -> Any:
    make, args, (attributes, slots), _, _, setstate = _cp._dynamic_class_reduce(cls)
    bookkeeping = ("__dataclass_params__", "__dataclass_fields__", *_PYTHON_SPECIFIC)
    kept = {k: v for k, v in attributes.items() if k not in bookkeeping and not generated(v)}
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    own = cls.__dict__.get("__annotations__", {})
    fields = []
    for name, field in cls.__dataclass_fields__.items():  # type: ignore[attr-defined]
        if name in own and field._field_type is dataclasses._FIELD:  # type: ignore[attr-defined]
            fields.append((name, _field_options(field)))
    # 3.10 and 3.11 do not record match_args and kw_only in the params: what they imply is the same.
    implied = {"match_args": "__match_args__" in cls.__dict__, "kw_only": False}
    spec = {"params": {p: getattr(params, p, implied.get(p)) for p in _PARAMS}, "fields": fields}
    return make, args, (setstate, (kept, slots), spec), None, None, portable_classes.set_dataclass_state


def _field_options(field: dataclasses.Field) -> dict[str, Any]:  # type: ignore[type-arg]
    """``dataclasses.field`` keyword arguments; the MISSING sentinel never travels (it would not be identical)."""
    options: dict[str, Any] = {}
    if field.default is not dataclasses.MISSING:
        options["default"] = field.default
    if field.default_factory is not dataclasses.MISSING:
        options["default_factory"] = field.default_factory
    for name in _FIELD_OPTIONS:
        value = getattr(field, name, dataclasses.MISSING)
        if value is not dataclasses.MISSING:
            options[name] = value
    if field.metadata:
        options["metadata"] = dict(field.metadata)
    return options
