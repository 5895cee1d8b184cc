"""Live objects in their initial state travel: the server's own standard library makes them anew.

PyTriton keeps the user's process alive, so a lock, a queue or an executor its callable holds simply
stays there. A static repository's payload is unpickled in each stub process instead, and pickle
refuses these objects (``cannot pickle '_thread.lock' object``). An object whose state at build time
is the state its constructor gives it loses nothing by being constructed again in the server with the
same settings (dill rebuilds locks and queues the same way): a lock nobody holds, an event not set, an
empty queue, an executor that has run nothing. Each is pickled as a call of the server's class by name
(``getattr(importlib.import_module("threading"), "Lock")()``): the server's Python makes it, whichever
Python built the payload (``threading.Lock`` is a function up to 3.12 and a class from 3.13), and
unpickling needs nothing of repogen's. Anything else would lose state (items, a holder, a set flag) or
a running thread without a word, so it is refused: :class:`NotMadeAnew` says what was found and the fix.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import importlib
import pickle
import queue
import re
import threading
from collections.abc import Callable
from typing import Any

from cloudpickle import cloudpickle as _cp

IN_SERVER = (
    "create it in the server instead: in the __init__ of a class bound as the model (it runs once per instance "
    "inside the server) or lazily on the first call"
)
INITIAL = (
    "the server makes a live object anew only from its initial state (a lock nobody holds, an event not set, an "
    "empty queue, an executor that has run nothing)"
)
THREAD = "a thread cannot travel: it runs in this process, and each model instance runs in a server process"
_DEFAULT_PREFIX = re.compile(r"ThreadPoolExecutor-\d+")  # what an executor calls its threads when not told


class NotMadeAnew(pickle.PicklingError):
    """A live object in a state the server cannot make anew: what was ``found``, what was ``expected``, the ``fix``."""

    def __init__(self, obj: Any, found: str, fix: str, expected: str = INITIAL):
        super().__init__(f"{found}, and {expected}. {fix[:1].upper()}{fix[1:]}")
        self.obj = obj
        self.found = found  # ``a queue.Queue holding 3 items``
        self.expected = expected
        self.fix = fix


class _Module:
    def __init__(self, name: str):
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return importlib.import_module, (self.name,)


class _Named:
    """Pickles as the object the server's ``module`` has under ``name``: its own class or factory.

    Callable (as that object) because pickle checks that what a reduction calls is callable.
    """

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:
        return getattr(importlib.import_module(self.module), self.name)(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return getattr, (_Module(self.module), self.name)


# One of each for the whole build: pickle memoizes them, so a payload names each class once.
_LOCK = _Named("threading", "Lock")
_RLOCK = _Named("threading", "RLock")
_CONDITION = _Named("threading", "Condition")
_SEMAPHORE = _Named("threading", "Semaphore")
_BOUNDED = _Named("threading", "BoundedSemaphore")
_EVENT = _Named("threading", "Event")
_QUEUES = {name: _Named("queue", name) for name in ("Queue", "LifoQueue", "PriorityQueue", "SimpleQueue")}
_EXECUTOR = _Named("concurrent.futures.thread", "ThreadPoolExecutor")

Reduced = tuple[Any, tuple[Any, ...]]
Handler = Callable[[Any], "tuple[Reduced, str] | None"]  # None: pickled by its state (a subclass, checked)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _waiting(condition: Any) -> int:
    return len(getattr(condition, "_waiters", ()))


def _refuse_waiters(obj: Any, what: str, count: int) -> None:
    if count:
        raise NotMadeAnew(
            obj, f"{what} that {_plural(count, 'thread')} of this process wait{'s' if count == 1 else ''} on",
            f"stop the threads that use it before the build, or {IN_SERVER}",
        )  # fmt: skip


def _held(lock: Any) -> str | None:
    """Who holds ``lock`` (a Lock or an RLock): None when nobody does."""
    if hasattr(lock, "_is_owned"):  # an RLock
        if lock._is_owned():
            return "held by the building thread"
        if lock.acquire(blocking=False):
            lock.release()
            return None
        return "held by another thread"
    locked = getattr(lock, "locked", None)
    return "held" if callable(locked) and locked() else None


def _refuse_held(obj: Any, what: str, lock: Any) -> None:
    holder = _held(lock)
    if holder is not None:
        found = f"a held {what}" if holder == "held" else f"a {what} {holder}"
        raise NotMadeAnew(obj, found, f"release it before the build (leave its `with` block), or {IN_SERVER}")


def _lock(obj: Any) -> tuple[Reduced, str]:
    _refuse_held(obj, "threading.Lock", obj)
    return (_LOCK, ()), "threading.Lock()"


def _rlock(obj: Any) -> tuple[Reduced, str]:
    _refuse_held(obj, "threading.RLock", obj)
    return (_RLOCK, ()), "threading.RLock()"


def _condition(obj: Any) -> tuple[Reduced, str]:
    lock = obj._lock
    if _held(lock) is not None:
        raise NotMadeAnew(
            obj, "a threading.Condition whose lock is held",
            f"release it before the build (leave its `with` block), or {IN_SERVER}",
        )  # fmt: skip
    _refuse_waiters(obj, "a threading.Condition", _waiting(obj))
    made = _EXACT.get(type(lock))
    inner = "threading.Lock()" if made is _lock else "threading.RLock()" if made is _rlock else _name(type(lock))
    return (_CONDITION, (lock,)), f"threading.Condition({inner})"


def _semaphore(obj: Any) -> tuple[Reduced, str]:
    kind = "BoundedSemaphore" if isinstance(obj, threading.BoundedSemaphore) else "Semaphore"
    _refuse_waiters(obj, f"a threading.{kind}", _waiting(obj._cond))
    if kind == "BoundedSemaphore":
        taken = obj._initial_value - obj._value
        if taken:
            raise NotMadeAnew(
                obj, f"a threading.BoundedSemaphore acquired {_plural(taken, 'time')} and not released "
                f"(value {obj._value} of {obj._initial_value})",
                f"release it before the build, or {IN_SERVER}",
            )  # fmt: skip
        return (_BOUNDED, (obj._initial_value,)), f"threading.BoundedSemaphore({obj._initial_value})"
    return (_SEMAPHORE, (obj._value,)), f"threading.Semaphore({obj._value})"


def _event(obj: Any) -> tuple[Reduced, str]:
    if obj.is_set():
        raise NotMadeAnew(
            obj, "a set threading.Event", f"clear it before the build (set it in the server), or {IN_SERVER}"
        )
    _refuse_waiters(obj, "a threading.Event", _waiting(obj._cond))
    return (_EVENT, ()), "threading.Event()"


def _check_queue(obj: Any, what: str) -> None:
    if _held(obj.mutex) is not None:
        raise NotMadeAnew(obj, f"a {what} whose lock is held", f"stop the threads that use it, or {IN_SERVER}")
    items = obj._qsize()
    if items:
        raise NotMadeAnew(
            obj, f"a {what} holding {_plural(items, 'item')}",
            f"empty it before the build (nothing in the server would take the items out), or {IN_SERVER}",
        )  # fmt: skip
    _refuse_waiters(obj, f"a {what}", sum(_waiting(c) for c in (obj.not_empty, obj.not_full, obj.all_tasks_done)))


def _queue(obj: Any) -> tuple[Reduced, str]:
    name = type(obj).__name__
    _check_queue(obj, f"queue.{name}")
    return (_QUEUES[name], (obj.maxsize,)), f"queue.{name}(maxsize={obj.maxsize})"


def _simple_queue(obj: Any) -> tuple[Reduced, str]:
    items = obj.qsize()
    if items:
        raise NotMadeAnew(
            obj, f"a queue.SimpleQueue holding {_plural(items, 'item')}",
            f"empty it before the build (nothing in the server would take the items out), or {IN_SERVER}",
        )  # fmt: skip
    return (_QUEUES["SimpleQueue"], ()), "queue.SimpleQueue()"


def _check_executor(obj: Any, what: str) -> None:
    fix = (
        "submit nothing to it before the build (an executor that has run nothing is made anew with its max_workers "
        f"and thread_name_prefix), or {IN_SERVER}"
    )
    if getattr(obj, "_shutdown", False) or getattr(obj, "_broken", False):
        state = "shut-down" if getattr(obj, "_shutdown", False) else "broken"
        raise NotMadeAnew(obj, f"a {state} {what}", f"bind a new one, or {IN_SERVER}")
    threads = len(getattr(obj, "_threads", ()))
    if threads:
        raise NotMadeAnew(obj, f"a {what} that has started {_plural(threads, 'thread')} (it has run work)", fix)
    work = obj._work_queue.qsize()
    if work:
        raise NotMadeAnew(obj, f"a {what} with {_plural(work, 'work item')} queued", fix)


def _executor(obj: Any) -> tuple[Reduced, str]:
    what = "concurrent.futures.ThreadPoolExecutor"
    _check_executor(obj, what)
    prefix = obj._thread_name_prefix
    prefix = "" if _DEFAULT_PREFIX.fullmatch(prefix) else prefix  # the server numbers its own executors
    initializer, initargs = obj._initializer, tuple(obj._initargs)
    settings = [f"max_workers={obj._max_workers}"]
    settings += [f"thread_name_prefix={prefix!r}"] if prefix else []
    if initializer is not None:
        name = getattr(initializer, "__qualname__", type(initializer).__qualname__)
        settings += [f"initializer={name}"] + ([f"initargs=({len(initargs)} values)"] if initargs else [])
    return (_EXECUTOR, (obj._max_workers, prefix, initializer, initargs)), f"{what}({', '.join(settings)})"


def _queue_subclass(obj: Any) -> None:
    _check_queue(obj, f"queue.Queue ({_name(type(obj))})")


def _executor_subclass(obj: Any) -> None:
    _check_executor(obj, f"concurrent.futures.ThreadPoolExecutor ({_name(type(obj))})")


def _thread(obj: Any) -> None:
    kind = "threading.Thread" + ("" if type(obj) is threading.Thread else f" ({_name(type(obj))})")
    if obj._started.is_set():
        state = "running" if obj.is_alive() else "finished"
        found = f"a started {kind} named {obj.name!r} ({state})"
    else:
        found = f"a {kind} named {obj.name!r}, not started"
    raise NotMadeAnew(
        obj, found,
        "start it in the server instead: in the __init__ of a class bound as the model (it runs once per instance "
        "inside the server) or lazily on the first call", THREAD,
    )  # fmt: skip


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


_EXACT: dict[type, Handler] = {
    type(threading.Lock()): _lock,
    threading.Condition: _condition,
    threading.Semaphore: _semaphore,
    threading.BoundedSemaphore: _semaphore,
    threading.Event: _event,
    queue.Queue: _queue,
    queue.LifoQueue: _queue,
    queue.PriorityQueue: _queue,
    queue.SimpleQueue: _simple_queue,
    concurrent.futures.ThreadPoolExecutor: _executor,
    **{kind: _rlock for kind in (type(threading.RLock()), threading._PyRLock) if kind is not None},  # type: ignore[attr-defined]
}
_CHECKED: tuple[tuple[type, Callable[[Any], None]], ...] = (
    (threading.Thread, _thread),
    (queue.Queue, _queue_subclass),
    (concurrent.futures.ThreadPoolExecutor, _executor_subclass),
)
_UNSEEN = object()
_IMMUTABLE = (enum.Enum, tuple, frozenset, str, bytes, int, float, complex)


def handler(cls: type) -> Handler | None:
    """How instances of ``cls`` travel: made anew (exact kinds), checked and pickled by state (their subclasses)."""
    exact = _EXACT.get(cls)
    if exact is not None:
        return exact
    for base, check in _CHECKED:
        if issubclass(cls, base):
            return lambda obj, check=check: check(obj)  # type: ignore[misc]
    return None


def refused(obj: Any) -> NotMadeAnew | None:
    """Why ``obj`` cannot travel as a live object (None: it can, or it is no live object)."""
    found = handler(type(obj))
    try:
        if found is not None:
            found(obj)
    except NotMadeAnew as exc:
        return exc
    except AttributeError:  # not the layout of the Pythons repogen knows: no live object of theirs
        return None
    return None


@dataclasses.dataclass
class Tracker:
    """What one payload's pickling made anew, and the objects two models may both hold, in pickling order."""

    made_anew: dict[int, tuple[Any, str]] = dataclasses.field(default_factory=dict)  # id -> (object, description)
    held: dict[int, Any] = dataclasses.field(default_factory=dict)  # instances of the user's classes and made anew
    inner: set[int] = dataclasses.field(default_factory=set)  # what made-anew objects pass on (a Condition's lock)
    _handlers: dict[type, Any] = dataclasses.field(default_factory=dict)
    _by_value: dict[type, bool] = dataclasses.field(default_factory=dict)

    def reduce(self, obj: Any) -> Any:
        """``obj`` as the server's constructor call, NotImplemented for anything else; raises :class:`NotMadeAnew`."""
        cls = type(obj)
        found = self._handlers.get(cls, _UNSEEN)
        if found is _UNSEEN:
            found = self._handlers[cls] = handler(cls)
        if found is None:
            if self._users(cls):
                self.held.setdefault(id(obj), obj)
            return NotImplemented
        try:
            made = found(obj)
        except AttributeError:  # a layout the Pythons repogen knows (3.10-3.13) do not have: pickled as before
            return NotImplemented
        if made is None:  # a subclass in its initial state: its state travels, its locks are made anew
            self.held.setdefault(id(obj), obj)
            return NotImplemented
        reduced, description = made
        self.made_anew[id(obj)] = (obj, description)
        self.inner.update(id(arg) for arg in reduced[1])
        self.inner.update(id(arg) for arg in (reduced[1][-1] if reduced[0] is _EXECUTOR else ()))  # initargs
        self.held.setdefault(id(obj), obj)
        return reduced

    def _users(self, cls: type) -> bool:
        """An instance of a class of the user's (pickled by value) that can change: not a class or function, not
        a value that cannot (an enum member, a namedtuple, a frozen dataclass), which two models may well share."""
        known = self._by_value.get(cls)
        if known is None:
            known = not issubclass(cls, (type, *_IMMUTABLE)) and cls.__module__ != "builtins"  # code, function, ...
            frozen = getattr(getattr(cls, "__dataclass_params__", None), "frozen", False)
            known = self._by_value[cls] = known and not frozen and not _cp._should_pickle_by_reference(cls)
        return known
