"""A thread a model leaves running keeps its instance's process, and so the unload and the server's stop, waiting:
the runtime names it when the model is finalized, before that wait (tests/integration/test_online_learning_fixed.py
serves a model that ends its own)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator

import pytest

from repogen.runtime.instance import lingering_message, lingering_threads


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_running_thread_that_is_not_a_daemon_lingers(release: threading.Event) -> None:
    trainer = threading.Thread(target=release.wait, name="online_learning")
    trainer.start()
    assert trainer in lingering_threads()
    release.set()
    trainer.join()
    assert trainer not in lingering_threads()


def test_daemons_and_idle_executor_workers_do_not(release: threading.Event) -> None:
    daemon = threading.Thread(target=release.wait, name="daemon", daemon=True)
    daemon.start()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="streaming_bot") as executor:
        executor.submit(lambda: None).result()  # its worker now waits for work
        names = [t.name for t in lingering_threads()]
        assert "daemon" not in names and not any(name.startswith("streaming_bot") for name in names)


def test_the_message_names_the_model_the_threads_and_the_two_fixes(release: threading.Event) -> None:
    threads = [threading.Thread(target=release.wait, name=name) for name in ("a", "b")]
    assert lingering_message("MnistOnline", threads[:1]) == (
        "model 'MnistOnline': thread 'a' is still running after the model's finalize and is not a daemon: this "
        "instance's process cannot exit until it ends, so unloading the model, and stopping the server, waits for it "
        "(up to tritonserver's --exit-timeout-secs). End it in a finalize() method of the class bound as the model "
        "(it runs when the model unloads), or start it with daemon=True"
    )
    message = lingering_message("M", threads)
    assert "threads 'a', 'b' are still running" in message and "until they end" in message
