"""Objects two bound models both hold: one object in PyTriton, one copy per model in the server.

PyTriton serves every bound model from the user's one process, so two models bound to methods of one
object (PyTriton's ``online_learning_mnist``: ``train`` and ``infer`` of one ``OnlineLearning``) share
it: what one model changes the other sees, a lock one holds excludes the other. In a static repository
each model's payload is unpickled in that model's own stub processes: each gets its own copy, and
changes one makes are never seen by the other. That is right for a tokenizer and wrong for a model
one endpoint trains and another serves, and only the user knows which, so the build says so, per
object, naming each model and where it holds the object. A thread shared that way is refused: it
cannot travel at all (``live_objects``), and the fix is not to make it anew but to share differently.

What the models hold is what their pickling saw (``live_objects.Tracker``: instances of the user's
classes and the objects made anew), so nothing is walked twice for models that share nothing; only
the shared objects' chains are looked up (``attribute_chains``), and only the outermost shared object is named.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..errors import BuildError
from . import attribute_chains
from .live_objects import refused
from .unpicklable import describe


class Unit(Protocol):
    """What one payload pickles (``repogen.emit.payloads.PayloadUnit``): its key and the callables to walk from."""

    @property
    def key(self) -> tuple[str, int]: ...

    @property
    def callables(self) -> tuple[tuple[str, Any], ...]: ...


Groups = Sequence[tuple[str, Sequence[Unit]]]
Held = Mapping[tuple[str, int], Sequence[tuple[Any, str]]]

FIX = (
    "if they must share it, bind one model that does both (an optional input can say which), or "
    "keep the shared state outside the server (a file, a database, another service)"
)


@dataclasses.dataclass(frozen=True)
class Shared:
    """One object held by several models: what it is, and (model, chain) for each."""

    object: str
    holders: tuple[tuple[str, str], ...]

    def message(self) -> str:
        models = [f"model '{model}' (at {chain})" for model, chain in self.holders]
        both = "both" if len(models) == 2 else "all"
        listed = ", ".join(models[:-1]) + " and " + models[-1]
        return (
            f"{listed} {both} hold {self.object}: in the server each model gets its own copy, and changes one "
            f"makes are not seen by the other{'s' if len(models) > 2 else ''}. PyTriton served them from one process; "
            f"{FIX}"
        )


def find_shared(groups: Groups, held: Held, fused: Mapping[str, Sequence[str]]) -> tuple[Shared, ...]:
    """Every object more than one model holds (a fused ensemble's copy of its own steps' objects aside), in the
    order the models were pickled. ``held``: what each payload's pickling saw (``Payload.held``)."""
    holders: dict[int, list[str]] = {}
    described: dict[int, str] = {}
    for name, units in groups:
        for unit in units:
            for obj, description in held[unit.key]:
                models = holders.setdefault(id(obj), [])
                described.setdefault(id(obj), description)
                if name not in models:
                    models.append(name)
    shared = {key: _separate(models, fused) for key, models in holders.items()}
    shared = {key: models for key, models in shared.items() if len(models) > 1}
    if not shared:
        return ()
    chains: dict[tuple[str, int], str] = {}
    for name, units in groups:
        mine = [key for key, models in shared.items() if name in models]
        for unit in units if mine else ():
            found = attribute_chains.walk(unit.callables, mine)
            missing = "" if found.complete else attribute_chains.not_traced(unit.callables[0][0])
            for key in mine:
                chain = found.chains.get(key) or missing
                if chain and (name, key) not in chains:
                    chains[name, key] = chain
    return tuple(
        Shared(described[key], tuple((model, chains[model, key]) for model in models))
        for key, models in shared.items()
        if all((model, key) in chains for model in models)  # else it is inside another shared object, named instead
    )


def _separate(models: Sequence[str], fused: Mapping[str, Sequence[str]]) -> list[str]:
    """The models that hold their own copies: a fused ensemble holding its own steps' objects is not one more."""
    return [m for m in models if not any(step in models for step in fused.get(m, ()))]


def refuse_shared_thread(culprit: Any, model: str, groups: Groups) -> None:
    """A thread (or an object that is one) refused for ``model``: when other models hold it too, the error says
    what sharing it meant in PyTriton and how to share in the server instead."""
    if not isinstance(culprit, threading.Thread):
        return
    at: list[tuple[str, str]] = []
    for name, units in groups:
        for unit in units:
            chain = attribute_chains.walk(unit.callables, [id(culprit)]).chains.get(id(culprit))
            if chain is not None and name not in (m for m, _ in at):
                at.append((name, chain))
    if len(at) < 2 or model not in (m for m, _ in at):
        return
    reason = refused(culprit)
    found = reason.found if reason is not None else describe(culprit)
    models = " and ".join(f"model '{name}'" for name, _ in at)
    where = "; ".join(f"model '{name}' at {chain}" for name, chain in at)
    raise BuildError(
        f"{models} both hold {found} ({where}). PyTriton ran them in your one process beside that thread; in the "
        "server each model runs in processes of its own, and a thread cannot travel there. Bind one model that "
        "does both (a class bound as the model can start the thread in its __init__, inside the server), or keep "
        "the shared state outside the server (a file, a database, another service) and start the work there"
    )
