"""The pod harness (repogen.testing.pod) judges a probe by its outcome, not by the probe's timeoutSeconds as a clock:
on a loaded test host `docker exec` and the container's python3 take seconds, which says nothing of the node the
timeouts are sized for. Only a probe that hangs past PROBE_HANG_S fails for time, and says so."""

from __future__ import annotations

import subprocess
from typing import Any

from repogen.testing.pod import PROBE_HANG_S, Pod

SLOW_EXEC_S = 5.0  # what one `docker exec` of the probe took on a loaded host: more than its timeoutSeconds


class SlowContainer:
    """Stands in for a running container whose exec answers after SLOW_EXEC_S (or never, with ``hang``)."""

    def __init__(self, returncode: int, hang: bool = False):
        self.returncode, self.hang = returncode, hang

    def exec(self, *command: str, timeout: float = 120, **_: Any) -> subprocess.CompletedProcess[str]:
        if self.hang or timeout < SLOW_EXEC_S:
            raise subprocess.TimeoutExpired(list(command), timeout)
        return subprocess.CompletedProcess(list(command), self.returncode, "", "model 'M' does not answer")


def _pod(container: SlowContainer) -> Pod:
    probe = {"exec": {"command": ["python3", "-c", "check"]}, "periodSeconds": 10, "timeoutSeconds": 1}
    pod = Pod({"containers": [{"name": "c", "image": "i", "ports": [], "livenessProbe": probe}]})
    pod.container = container  # type: ignore[assignment]
    return pod


def test_a_slow_probe_is_judged_by_what_it_answered():
    assert _pod(SlowContainer(0)).probe("livenessProbe").passed
    failed = _pod(SlowContainer(1)).probe("livenessProbe")
    assert not failed.passed and failed.detail == "model 'M' does not answer"


def test_only_a_hung_probe_fails_for_time():
    hung = _pod(SlowContainer(0, hang=True)).probe("livenessProbe")
    assert not hung.passed and hung.detail == f"hung: no outcome in {PROBE_HANG_S:.0f} s"
