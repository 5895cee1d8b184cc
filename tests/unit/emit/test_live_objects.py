"""Live objects in their initial state are made anew in the server; used ones are refused, naming why.

PyTriton keeps a callable's locks, queues and executors alive in its own process; a repository's payload
is unpickled in the server, where the server's standard library makes each anew with the same settings.
These tests pickle every kind in both states, read the build's record and its messages; the real server
serves tests/apps/live (tests/integration/test_live_objects_served.py).
"""

from __future__ import annotations

import json
import pickle
import queue
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from repogen import ModelConfig, Repository, Tensor
from repogen.build import build_repository
from repogen.cli import cli
from repogen.emit.payloads import MADE_ANEW as EMITTED_KEY
from repogen.errors import BuildError
from repogen.ondisk.describe import MADE_ANEW as MADE_ANEW_KEY
from repogen.pickling import picklers as pickling
from repogen.runtime.payload import load_payload
from repogen.server.provision.pythons import find_python

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
UNBATCHED = ModelConfig(batching=False)


def _holder_class() -> type:
    class Holder:
        """What a PyTriton user binds: an object whose method is the callable (a class of the app's: by value)."""

        def __init__(self, **live: Any):
            self.__dict__.update(live)

        def infer(self, requests):
            return requests

    return Holder


Holder = _holder_class()


def _build(tmp_path: Path, pin_python: bool = False, **live: Any):
    models = Repository()
    models.bind("M", infer_func=Holder(**live).infer, inputs=X, outputs=X, config=UNBATCHED)
    return build_repository(models, tmp_path / "repo", pin_python=pin_python)


def _executor_initializer(value):
    return value


MADE_ANEW = {
    "lock": (threading.Lock, "threading.Lock()", lambda o: not o.locked()),
    "rlock": (threading.RLock, "threading.RLock()", lambda o: o.acquire(blocking=False)),
    "condition": (threading.Condition, "threading.Condition(threading.RLock())", lambda o: o.acquire(blocking=False)),
    "semaphore": (lambda: threading.Semaphore(3), "threading.Semaphore(3)", lambda o: o._value == 3),
    "bounded": (lambda: threading.BoundedSemaphore(2), "threading.BoundedSemaphore(2)", lambda o: o._value == 2),
    "event": (threading.Event, "threading.Event()", lambda o: not o.is_set()),
    "queue": (lambda: queue.Queue(maxsize=5), "queue.Queue(maxsize=5)", lambda o: o.maxsize == 5 and o.empty()),
    "lifo": (queue.LifoQueue, "queue.LifoQueue(maxsize=0)", lambda o: type(o) is queue.LifoQueue),
    "priority": (lambda: queue.PriorityQueue(2), "queue.PriorityQueue(maxsize=2)", lambda o: o.maxsize == 2),
    "simple": (queue.SimpleQueue, "queue.SimpleQueue()", lambda o: o.empty()),
    "executor": (
        lambda: ThreadPoolExecutor(max_workers=2, thread_name_prefix="bot"),
        "concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix='bot')",
        lambda o: (
            (o._max_workers, o._thread_name_prefix, o.submit(threading.current_thread).result().name)
            == (2, "bot", "bot_0")
        ),
    ),
    "executor with an initializer": (
        lambda: ThreadPoolExecutor(1, "init", _executor_initializer, (7,)),
        "concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix='init', "
        "initializer=_executor_initializer, initargs=(1 values))",
        lambda o: (o._initializer.__name__, o._initargs) == ("_executor_initializer", (7,)),
    ),
    "executor named by default": (
        lambda: ThreadPoolExecutor(max_workers=3),
        "concurrent.futures.ThreadPoolExecutor(max_workers=3)",  # the server numbers its own executors' threads
        lambda o: o._thread_name_prefix.startswith("ThreadPoolExecutor-"),
    ),
}


@pytest.mark.parametrize("kind", MADE_ANEW)
def test_each_kind_in_its_initial_state_is_made_anew_with_its_settings(kind):
    make, description, check = MADE_ANEW[kind]
    original = make()
    pickled = pickling.dumps({"held": original})
    assert [text for obj, text in pickled.made_anew if id(obj) not in pickled.inner] == [description]
    rebuilt = pickle.loads(pickled.data)["held"]
    assert type(rebuilt) is type(original) and rebuilt is not original
    assert check(rebuilt)


def test_the_server_makes_them_by_name_with_its_own_python():
    """``threading.Lock`` is a function up to 3.12 and a class on 3.13: the payload names it, each Python makes it."""
    live = {
        "lock": threading.Lock(),
        "condition": threading.Condition(threading.Lock()),
        "queue": queue.Queue(3),
        "executor": ThreadPoolExecutor(2, "bot"),
    }
    data = pickling.dumps(live).data
    assert b"repogen" not in data and b"cloudpickle" not in data  # the server's standard library alone
    check = (
        "import pickle, sys; o = pickle.loads(sys.stdin.buffer.read()); "
        "e = o['executor']; print(type(o['lock']).__name__, o['queue'].maxsize, e._max_workers, e._thread_name_prefix)"
    )
    ran = 0
    for version in ("3.10", "3.12", "3.13"):
        python = find_python(version)
        if python is None:
            continue
        done = subprocess.run([str(python), "-c", check], input=data, capture_output=True, check=True)
        assert done.stdout.decode().split() == ["lock", "3", "2", "bot"], version
        ran += 1
    if not ran:
        pytest.skip("no Python 3.10, 3.12 or 3.13 installed here")


def test_a_condition_keeps_the_lock_its_holder_also_holds():
    lock = threading.Lock()
    holder = Holder(lock=lock, ready=threading.Condition(lock), jobs=queue.Queue())
    rebuilt = pickle.loads(pickling.dumps(holder).data)
    assert rebuilt.ready._lock is rebuilt.lock
    assert rebuilt.jobs.not_empty._lock is rebuilt.jobs.mutex  # the queue's own conditions share its mutex


def _held_lock():
    lock = threading.Lock()
    lock.acquire()
    return lock


def _held_rlock():
    lock = threading.RLock()
    lock.acquire()
    return lock


def _rlock_of_another_thread():
    lock, taken, done = threading.RLock(), threading.Event(), threading.Event()

    def hold():
        with lock:
            taken.set()
            done.wait(10)

    threading.Thread(target=hold, daemon=True).start()
    taken.wait(10)
    return lock, done


def _with(make, act):
    def made():
        obj = make()
        act(obj)
        return obj

    return made


def _finished_thread():
    thread = threading.Thread(target=int, name="worker")
    thread.start()
    thread.join()
    return thread


class Trainer(threading.Thread):
    def run(self):
        return None


REFUSED = {
    "a held lock": (_held_lock, "a held threading.Lock", "Release it before the build"),
    "an RLock held here": (_held_rlock, "a threading.RLock held by the building thread", "Release it"),
    "a condition whose lock is held": (
        _with(threading.Condition, lambda c: c.acquire()),
        "a threading.Condition whose lock is held",
        "Release it",
    ),
    "a set event": (_with(threading.Event, lambda e: e.set()), "a set threading.Event", "Clear it before the build"),
    "a bounded semaphore acquired": (
        _with(lambda: threading.BoundedSemaphore(2), lambda s: s.acquire()),
        "a threading.BoundedSemaphore acquired 1 time and not released (value 1 of 2)",
        "Release it",
    ),
    "a queue with items": (
        _with(queue.Queue, lambda q: [q.put(i) for i in range(3)]),
        "a queue.Queue holding 3 items",
        "Empty it before the build",
    ),
    "a simple queue with an item": (
        _with(queue.SimpleQueue, lambda q: q.put(1)),
        "a queue.SimpleQueue holding 1 item",
        "Empty it",
    ),
    "an executor that ran work": (
        _with(lambda: ThreadPoolExecutor(2, "bot"), lambda e: e.submit(int).result()),
        "a concurrent.futures.ThreadPoolExecutor that has started 1 thread (it has run work)",
        "Submit nothing to it before the build",
    ),
    "an executor shut down": (
        _with(ThreadPoolExecutor, lambda e: e.shutdown()),
        "a shut-down concurrent.futures.ThreadPoolExecutor",
        "Bind a new one",
    ),
    "a started thread": (
        _finished_thread,
        "a started threading.Thread named 'worker' (finished), and a thread cannot travel",
        "Start it in the server instead",
    ),
    "a thread not started (a subclass)": (
        lambda: Trainer(name="trainer"),
        "a threading.Thread (test_live_objects.Trainer) named 'trainer', not started",
        "Start it in the server instead",
    ),
    "a queue subclass with items": (
        _with(type("Jobs", (queue.Queue,), {}), lambda q: q.put(1)),
        "a queue.Queue (test_live_objects.Jobs) holding 1 item",
        "Empty it",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_used_live_object_keeps_the_error_saying_why_this_one_cannot(tmp_path, case):
    make, found, fix = REFUSED[case]
    with pytest.raises(BuildError) as info:
        _build(tmp_path, state=make())
    message = str(info.value)
    assert message.startswith(f"{info.value.site}: model 'M': cannot pickle infer_func (a method) -> method self ")
    assert "-> attribute 'state' (" in message
    assert f"): {found}" in message
    assert fix in message and "in the __init__ of a class bound as the model" in message
    assert not (tmp_path / "repo").exists()


def test_an_rlock_another_thread_holds_is_refused(tmp_path):
    lock, release = _rlock_of_another_thread()
    try:
        with pytest.raises(BuildError, match=r"a threading\.RLock held by another thread, and the server makes"):
            _build(tmp_path, lock=lock)
    finally:
        release.set()


def test_a_queue_subclass_in_its_initial_state_travels_with_its_own_attributes():
    jobs = type("Jobs", (queue.Queue,), {})(maxsize=4)
    jobs.label = "mine"
    rebuilt = pickle.loads(pickling.dumps(jobs).data)
    assert (type(rebuilt).__name__, rebuilt.maxsize, rebuilt.label, rebuilt.empty()) == ("Jobs", 4, "mine", True)
    rebuilt.put(1)
    assert rebuilt.get(timeout=1) == 1


def test_the_build_records_each_object_made_anew_and_where_it_was(tmp_path):
    lock = threading.Lock()
    streamer = Holder(text_queue=queue.Queue(), lock=lock)
    result = _build(
        tmp_path, streamer=streamer, ready=threading.Condition(lock), pool=ThreadPoolExecutor(1, "streaming_bot")
    )
    expected = [
        {
            "object": "queue.Queue(maxsize=0)",
            "at": "infer_func -> method self -> attribute 'streamer' -> attribute 'text_queue'",
        },
        {"object": "threading.Lock()", "at": "infer_func -> method self -> attribute 'streamer' -> attribute 'lock'"},
        {"object": "threading.Condition(threading.Lock())", "at": "infer_func -> method self -> attribute 'ready'"},
        {
            "object": "concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix='streaming_bot')",
            "at": "infer_func -> method self -> attribute 'pool'",
        },
    ]  # fmt: skip
    assert json.loads((result.output / "M" / "1" / "model.json").read_text())["made_anew"] == expected
    assert [(model, made.object, made.at) for model, made in result.made_anew] == [
        ("M", e["object"], e["at"]) for e in expected
    ]
    holder = load_payload(str(result.output / "M" / "1"), "M")[1]["infer_funcs"][0].__self__
    assert holder.ready._lock is holder.streamer.lock


def test_an_object_with_slots_is_walked_too(tmp_path):
    slotted = type("Slotted", (), {"__slots__": ("guard",)})()
    slotted.guard = threading.Lock()
    result = _build(tmp_path, slotted=slotted)
    assert [made.at for _, made in result.made_anew] == [
        "infer_func -> method self -> attribute 'slotted' -> attribute 'guard'"
    ]


def test_a_pinned_build_makes_them_anew_too(tmp_path):
    """--pin-python ships this Python's bytecode instead of source: the live objects travel the same way."""
    result = _build(tmp_path, pin_python=True, pool=ThreadPoolExecutor(2, "pinned"))
    assert [made.object for _, made in result.made_anew] == [
        "concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix='pinned')"
    ]
    pool = load_payload(str(result.output / "M" / "1"), "M")[1]["infer_funcs"][0].__self__.pool
    assert pool.submit(threading.current_thread).result().name == "pinned_0"
    with pytest.raises(BuildError, match=r"attribute 'held' \(a _thread.lock object\): a held threading\.Lock, and"):
        _build(tmp_path / "held", pin_python=True, held=_held_lock())


def test_a_condition_s_own_lock_is_not_listed_apart(tmp_path):
    result = _build(tmp_path, ready=threading.Condition())
    assert [made.object for _, made in result.made_anew] == ["threading.Condition(threading.RLock())"]


def test_repogen_inspect_shows_them_from_model_json(tmp_path):
    _build(tmp_path, jobs=queue.Queue(maxsize=2))
    shown = CliRunner().invoke(cli, ["inspect", str(tmp_path / "repo")])
    assert shown.exit_code == 0, shown.output
    assert (
        "  made anew in the server (v1): queue.Queue(maxsize=2) at infer_func -> method self -> attribute 'jobs'\n"
        in (shown.stdout)
    )
    described = json.loads(CliRunner().invoke(cli, ["inspect", "--json", str(tmp_path / "repo")]).stdout)
    assert described["models"][0][MADE_ANEW_KEY] == {
        "1": [{"object": "queue.Queue(maxsize=2)", "at": "infer_func -> method self -> attribute 'jobs'"}]
    }
    assert MADE_ANEW_KEY == EMITTED_KEY  # the key the build writes is the one inspect reads


def test_a_payload_without_live_objects_records_nothing(tmp_path):
    result = _build(tmp_path, scale=2.0)
    assert result.made_anew == ()
    assert "made_anew" not in json.loads((result.output / "M" / "1" / "model.json").read_text())


DIALOGPT = """
import concurrent.futures
import queue

import numpy as np
from repogen import ModelConfig, Repository, Tensor, batch


class TextIteratorStreamer:
    def __init__(self, tokenizer, timeout=None):
        self.tokenizer = tokenizer
        self.text_queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout


class StreamingBot:
    def __init__(self):
        self.streamer = TextIteratorStreamer({"eos": 0}, timeout=10.0)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="streaming_bot")

    @batch
    def __call__(self, new_inputs):
        yield {"response": new_inputs}


models = Repository()
models.bind(
    model_name="DialoGPT-small",
    infer_func=StreamingBot(),
    inputs=[Tensor(name="new_inputs", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="response", dtype=bytes, shape=(1,))],
    config=ModelConfig(decoupled=True),
)
"""


def test_repogen_build_prints_what_it_made_anew(tmp_path):
    app = tmp_path / "server.py"
    app.write_text(DIALOGPT)
    result = CliRunner().invoke(cli, ["build", f"{app}:models", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        "Made anew in the server, as they were at build time (each model instance gets its own):",
        "  model 'DialoGPT-small': queue.Queue(maxsize=0) at infer_func -> attribute 'streamer' -> attribute "
        "'text_queue'",
        "  model 'DialoGPT-small': concurrent.futures.ThreadPoolExecutor(max_workers=1, "
        "thread_name_prefix='streaming_bot') at infer_func -> attribute '_executor'",
    ]
    assert result.stderr == ""
