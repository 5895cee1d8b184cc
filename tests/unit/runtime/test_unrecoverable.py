"""PyTriton's unrecoverable error where the build did not see the model's code name it (runtime/unrecoverable.py).

emit/vendoring.py carries the module that stops the server only where the payload or the shipped sources name the
error (tests/unit/emit/test_vendoring.py; the server stopping: tests/integration/test_faults_served.py). Code that
reaches the class without its name (tests/unit/helpers/hidden_unrecoverable.py) finds the module missing: the
request is answered with the error, as any, and the log says why the server goes on and what to change.
"""

from __future__ import annotations

from pathlib import Path

import hidden_unrecoverable
import numpy as np

from repogen import ModelConfig, Repository, Tensor, build_repository
from repogen.packages import PackageOptions
from repogen.testing.carried import answer, carried_modules

IO = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(2,))],
    "outputs": [Tensor(name="y", dtype=np.float32, shape=(2,))],
}


def test_an_unrecoverable_error_the_build_did_not_see_is_answered_and_the_log_says_why_the_server_goes_on(
    tmp_path: Path,
) -> None:
    repo = Repository()
    repo.bind("Hidden", infer_func=hidden_unrecoverable.fatal, config=ModelConfig(batching=False), **IO)
    out = tmp_path / "repo"
    roots = (str(Path(hidden_unrecoverable.__file__).parent),)
    build_repository(repo, out, roots=roots, packages=PackageOptions(mode="record"))
    assert "unrecoverable" not in carried_modules(out / "Hidden" / "1")
    found = answer(out / "Hidden" / "1", {"x": [1.0, 2.0]})
    name = "".join(hidden_unrecoverable.PARTS[1])
    assert found["error"].startswith(f"{name}: the device is gone"), found
    assert (
        "from code the build did not see name it: the server goes on; name the error in the model's code and "
        "rebuild" in found["log"]
    ), found["log"]
