"""Spellings repogen replaced that keep working: the old keyword of a library class still constructs it, with a
``DeprecationWarning`` that names the new one, so code written against the old name runs while it is updated.

The CLI's renamed options are :func:`repogen.commands.params.renamed_option`'s.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

__all__ = ["renamed_fields"]


def renamed_fields(**renames: str) -> Any:
    """A class decorator for a (frozen) dataclass whose field ``renames[old]`` was called ``old``.

    ``Cls(old=value)`` builds ``Cls(new=value)`` and reading ``obj.old`` reads ``obj.new``, each with a
    ``DeprecationWarning``; passing both names is a ``TypeError``, as a repeated keyword is.
    """

    def decorate(cls: T) -> T:
        init = cls.__init__  # type: ignore[misc]

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{cls.__name__}() got both {new} and {old} (its former name): pass {new}")
                    warnings.warn(
                        f"{cls.__name__}({old}=...) is deprecated; use {new}=...", DeprecationWarning, stacklevel=2
                    )
                    kwargs[new] = kwargs.pop(old)
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        for old, new in renames.items():
            setattr(cls, old, property(_reader(cls.__name__, old, new)))
        return cls

    return decorate


def _reader(name: str, old: str, new: str) -> Any:
    def read(self: Any) -> Any:
        warnings.warn(f"{name}.{old} is deprecated; use {name}.{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return read
