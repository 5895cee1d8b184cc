"""`repogen serve APP --reload`: edit the source, the changed model reloads in place, nothing else moves.

Two clients send requests without pause to both models for the whole test: one to the model whose
module is edited, one to the other. Across an edit, a model that fails to load, a build that fails and
a model added to the app, no request of either fails, the unchanged model's backend stub is never
replaced, and the edited one answers with the new code once its reload line is printed.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from serve_cli import ROOT, ServeProcess, group_pids

from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration


class Traffic:
    """Requests to ``model`` back to back on its own gRPC connection until stopped; counts, values, errors."""

    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url, model
        self.ok, self.errors, self.values = 0, [], []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client = grpcclient.InferenceServerClient(self.url)
        tensor = grpcclient.InferInput("x", [1, 1], "FP32")
        tensor.set_data_from_numpy(np.ones((1, 1), np.float32))
        while not self._stop.is_set():
            try:
                value = float(client.infer(self.model, [tensor]).as_numpy("y")[0, 0])
            except Exception as exc:  # every failure is recorded and fails the test
                self.errors.append(str(exc)[:300])
            else:
                if not self.values or self.values[-1] != value:
                    self.values.append(value)
                self.ok += 1  # after its value: a count that includes a request includes what it answered
        client.close()

    def latest(self, after: int, timeout: float = 30.0) -> float:
        """The value answered once at least ``after`` more requests have succeeded; an assertion error if they
        have not within ``timeout`` s, so that stalled traffic never passes for an unchanged value."""
        start = self.ok
        deadline = time.monotonic() + timeout
        while self.ok < start + after:
            assert time.monotonic() < deadline, (
                f"{self.model}: {self.ok - start} of {after} requests answered in {timeout:.0f} s; "
                f"last errors: {self.errors[-3:]}"
            )
            time.sleep(0.02)
        return self.values[-1]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _stub(pgid: int, model: str) -> int:
    """The backend stub process of ``model``'s instance (its command line names ``<model>_0_0``)."""
    for pid in group_pids(pgid):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if f"{model}_0_0".encode() in cmdline:
            return pid
    raise AssertionError(f"no stub for {model} in process group {pgid}")


def test_reload_changes_only_the_edited_model_and_fails_no_request(
    tmp_path: Path, triton_install: TritonInstallation
) -> None:
    app = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "apps" / "reload", app)
    edited = app / "edited.py"
    serve = ServeProcess(f"{app / 'app.py'}:models", triton_install, "--reload")
    stable = changing = None
    try:
        server_pid = int(serve.wait_for(r"ready \(pid (\d+)\), serving 2 model\(s\)")[1])
        stable_stub = _stub(server_pid, "Stable")
        stable = Traffic(f"127.0.0.1:{serve.grpc}", "Stable")
        changing = Traffic(f"127.0.0.1:{serve.grpc}", "Edited")
        assert changing.latest(after=20) == 2.0 and stable.latest(after=20) == 2.0

        # 1. An edit: Edited reloads with the new code; Stable is neither rebuilt nor reloaded.
        mark = len(serve.lines)
        edited.write_text(edited.read_text().replace("x + 1", "x + 100"))
        serve.wait_for(r"^Reload: edited\.py changed; rebuilding ", after=mark)
        serve.wait_for(r"^Reload: rebuilt in [\d.]+ s; loading Edited$", after=mark)
        serve.wait_for(r"^Reload: Edited reloaded in [\d.]+ s; unchanged: Stable\.$", after=mark)
        assert changing.latest(after=20) == 101.0

        # 2. A model that fails to load: its previous build keeps serving.
        mark = len(serve.lines)
        good_code = edited.read_text()
        edited.write_text(
            "class edited:\n    def __init__(self, context):\n        raise RuntimeError('weights file missing')\n\n"
            "    def __call__(self, requests):\n        return [{'y': r['x']} for r in requests]\n"
        )
        serve.wait_for(r"^Reload: failed to load, so the previous build of each keeps serving", after=mark)
        serve.wait_for(r"^  Edited: RuntimeError: weights file missing \(at edited\.py\(3\): __init__\)$", after=mark)
        assert changing.latest(after=20) == 101.0

        # 3. A build that fails (a syntax error) changes nothing.
        mark = len(serve.lines)
        edited.write_text("def edited(x:\n")
        serve.wait_for(r"^Reload: the build failed; still serving the previous build\.$", after=mark)
        assert changing.latest(after=20) == 101.0

        # 4. Fixed, and a model added: both load; Stable still untouched.
        mark = len(serve.lines)
        edited.write_text(good_code.replace("x + 100", "x + 7"))
        (app / "app.py").write_text(
            (app / "app.py").read_text().replace('("Edited", edited))', '("Edited", edited), ("Added", stable))')
        )
        reloaded = serve.wait_for(r"^Reload: (.*) reloaded in [\d.]+ s; unchanged: Stable\.$", after=mark)
        if set(reloaded[1].split(", ")) != {"Added", "Edited"}:  # the two writes were seen apart: two reloads
            serve.wait_for(r"^Reload: (Added|Edited) reloaded in [\d.]+ s; unchanged: .*Stable", after=mark + 3)
        assert changing.latest(after=20) == 8.0
        assert _stub(server_pid, "Stable") == stable_stub
        assert _stub(server_pid, "Added")
    finally:
        for traffic in (stable, changing):
            if traffic is not None:
                traffic.stop()
        serve.stop()
    assert stable is not None and changing is not None
    reloads = "\n".join(line for line in serve.lines if line.startswith("Reload:"))
    print(f"\n{reloads}\nunder load: Stable {stable.ok} answered, {len(stable.errors)} failed; Edited {changing.ok} "
          f"answered, {len(changing.errors)} failed")  # fmt: skip
    assert stable.errors == [] and changing.errors == []
    assert stable.values == [2.0] and changing.values == [2.0, 101.0, 8.0]
    assert stable.ok > 100 and changing.ok > 100
