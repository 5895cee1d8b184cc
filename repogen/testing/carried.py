"""Proof that each model version loads from what it carries: its ``model.py`` imported and initialized with its own
vendored runtime alone, nothing of the installed repogen, as the server's stub would (repogen/emit/vendoring.py
decides what a version carries).

    from repogen.testing.carried import load_problems
    assert load_problems("model_repository", "another_repository") == {}

The repositories load in one fresh process (``python -m repogen.testing.carried REPO...``) on the in-process backend
shim: before each version, every ``repogen`` and ``cloudpickle`` module is forgotten, so a module the version does
not carry cannot be found in the installed package.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["load_problems"]

_VENDORED = ("repogen", "cloudpickle")


def load_problems(*repositories: str | Path) -> dict[str, str]:
    """Version directory -> what went wrong loading it from its own files; empty when every version loads."""
    command = [sys.executable, "-m", __name__, *map(str, repositories)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        return {" ".join(map(str, repositories)): run.stderr[-3000:]}
    problems: dict[str, str] = json.loads(run.stdout.splitlines()[-1])
    return problems


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


def _load(version_dir: Path, config: str) -> None:
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
    outside = sorted(
        name
        for name, loaded in sys.modules.items()
        if name.split(".")[0] in _VENDORED and not str(getattr(loaded, "__file__", "")).startswith(str(version_dir))
    )
    if outside:
        raise ImportError(f"loaded from outside {version_dir}: {outside}")


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
    print(json.dumps(main([Path(arg) for arg in sys.argv[1:]])))
