"""Proof that each model version loads from what it carries: its ``model.py`` imported and initialized with its own
vendored runtime alone, nothing of the installed repogen, as the server's stub would, and every runtime module it
carries imported from there too (a path this load does not take, a server's flags, may need one later)
(repogen/emit/vendoring.py decides what a version carries).

    from repogen.testing.carried import load_problems
    assert load_problems("model_repository", "another_repository") == {}

    assert answer(version_dir, {"x": [[1.0, 2.0]]}) == {"outputs": {"y": [[2.0, 4.0]]}}  # or {"error", "code"}

The repositories load in one fresh process (``python -m repogen.testing.carried REPO...``) on the in-process backend
shim: before each version, every ``repogen`` and ``cloudpickle`` module is forgotten, so a module the version does
not carry cannot be found in the installed package.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["answer", "carried_modules", "load_problems"]

_VENDORED = ("repogen", "cloudpickle")


def load_problems(*repositories: str | Path) -> dict[str, str]:
    """Version directory -> what went wrong loading it from its own files; empty when every version loads."""
    command = [sys.executable, "-m", __name__, *map(str, repositories)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        return {" ".join(map(str, repositories)): run.stderr[-3000:]}
    problems: dict[str, str] = json.loads(run.stdout.splitlines()[-1])
    return problems


def carried_modules(version_dir: str | Path) -> set[str]:
    """The runtime modules a version carries, named as repogen/emit/vendoring.py names them: ``payload``, ``__init__``
    (the runtime package's own), ``contract`` (a subpackage's ``__init__``), ``contract.package_trees``."""
    runtime = Path(version_dir) / "repogen" / "runtime"
    found = set()
    for path in runtime.rglob("*.py"):
        parts = path.relative_to(runtime).with_suffix("").parts
        found.add(".".join(parts[:-1] if len(parts) > 1 and parts[-1] == "__init__" else parts))
    return found


def answer(version_dir: str | Path, inputs: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (``inputs``: name -> nested lists, made the declared dtype) from a version loaded
    from its own files alone, in a fresh process: ``{"outputs": {name: nested lists}}`` or ``{"error": message,
    "code": code}``, with what the model logged (``"log"``); what a module the version does not carry does on that
    request's path, it does here."""
    command = [sys.executable, "-m", __name__, "--answer", str(version_dir), json.dumps(inputs)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        raise AssertionError(f"{version_dir} gave no answer: {run.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(run.stdout.splitlines()[-1])
    return found | {"log": run.stderr}


def _answer(version_dir: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    from repogen.local import backend_shim
    from repogen.runtime.contract import NUMPY_DTYPES

    pb = backend_shim.install()
    config = dict(_python_versions(version_dir.parent.parent))[version_dir]
    dtypes = {t["name"]: NUMPY_DTYPES[t["data_type"]] for t in json.loads(config).get("input", [])}
    request = pb.InferenceRequest(
        [pb.Tensor(name, np.asarray(value, dtype=dtypes[name])) for name, value in inputs.items()]
    )
    _forget_vendored()
    (response,) = _load(version_dir, config).execute([request])
    error = response.error()
    if error is not None:
        return {"error": error.message(), "code": error.code()}
    return {"outputs": {tensor.name(): tensor.as_numpy().tolist() for tensor in response.output_tensors()}}


def _python_versions(root: Path) -> list[tuple[Path, str]]:
    """Each version directory of a Python-backend model that repogen generated, with its config as JSON."""
    from google.protobuf import json_format, text_format

    from repogen.triton.proto import model_config_pb2

    found = []
    for config_path in sorted(root.glob("*/config.pbtxt")):
        config = text_format.Parse(config_path.read_text(encoding="utf-8"), model_config_pb2.ModelConfig())
        if config.platform or config.backend != "python":
            continue
        as_json = json_format.MessageToJson(config, preserving_proto_field_name=True)
        found += [(d, as_json) for d in sorted(config_path.parent.iterdir()) if (d / "repogen").is_dir()]
    return found


def _forget_vendored() -> None:
    for name in [n for n in sys.modules if n.split(".")[0] in _VENDORED]:
        del sys.modules[name]


def _load(version_dir: Path, config: str) -> Any:
    """Import and initialize one version as the stub does (instance 0, on the CPU)."""
    model = version_dir.parent.name
    spec = importlib.util.spec_from_file_location(f"{model}_{version_dir.name}.model", version_dir / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    instance: Any = module.TritonPythonModel()
    instance.initialize(
        {
            "model_config": config,
            "model_name": model,
            "model_version": version_dir.name,
            "model_repository": str(version_dir.parent),
            "model_instance_name": f"{model}_0_0",
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
        }  # fmt: skip
    )
    for name in sorted(carried_modules(version_dir)):  # each imports from what the version carries, used or not yet
        importlib.import_module("repogen.runtime" if name == "__init__" else f"repogen.runtime.{name}")
    outside = sorted(
        name
        for name, loaded in sys.modules.items()
        if name.split(".")[0] in _VENDORED and not str(getattr(loaded, "__file__", "")).startswith(str(version_dir))
    )
    if outside:
        raise ImportError(f"loaded from outside {version_dir}: {outside}")
    return instance


def main(roots: list[Path]) -> dict[str, str]:
    from repogen.local import backend_shim

    backend_shim.install()  # triton_python_backend_utils, kept when repogen's modules are forgotten
    problems = {}
    for version_dir, config in [found for root in roots for found in _python_versions(root)]:
        _forget_vendored()
        try:
            _load(version_dir, config)
        except BaseException as exc:  # noqa: BLE001 - whatever stops a load is the answer
            problems[str(version_dir)] = f"{type(exc).__name__}: {exc}"
        finally:
            sys.path[:] = [p for p in sys.path if p != str(version_dir)]
    return problems


if __name__ == "__main__":
    if sys.argv[1:2] == ["--answer"]:
        print(json.dumps(_answer(Path(sys.argv[2]), json.loads(sys.argv[3]))))
    else:
        print(json.dumps(main([Path(arg) for arg in sys.argv[1:]])))
