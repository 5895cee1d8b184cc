"""``repogen serve`` leaves out the models the embedded server has no backend for, and says why.

The served behaviour is in tests/integration/test_onnx_models.py; here, which models and the arguments.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from repogen.errors import ServeError
from repogen.server.running.backends import serve_without, unservable
from repogen.server.running.process import TritonServer

PYTHON = 'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
ONNX = 'name: "{name}"\nbackend: "onnxruntime"\nmax_batch_size: 0\n'
PLATFORM = 'name: "{name}"\nplatform: "tensorrt_plan"\nmax_batch_size: 0\n'
ENSEMBLE = (
    'name: "{name}"\nplatform: "ensemble"\nmax_batch_size: 0\n'
    'ensemble_scheduling {{ step {{ model_name: "{step}" model_version: -1 }} }}\n'
)


def _model(root: Path, name: str, text: str, **fields: str) -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(text.format(name=name, **fields))


def _server(tmp_path: Path, extra: tuple[str, ...] = ()) -> types.SimpleNamespace:
    backends = tmp_path / "backends-py3.10"
    (backends / "python").mkdir(parents=True)
    install = types.SimpleNamespace(backend_directory=lambda version: backends)
    server = types.SimpleNamespace(install=install, venv=types.SimpleNamespace(python_version="3.10"), extra_args=extra)
    server.backends = lambda: TritonServer.backends(server)  # type: ignore[arg-type]  # the embedded server's own rule
    return server


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _model(root, "Pre", PYTHON)
    _model(root, "Detector", ONNX)
    _model(root, "Plan", PLATFORM)
    _model(root, "Pipeline", ENSEMBLE, step="Detector")
    _model(root, "Outer", ENSEMBLE, step="Pipeline")
    _model(root, "Fine", ENSEMBLE, step="Pre")
    return root


def test_native_models_and_the_ensembles_through_them_are_named(repository: Path, tmp_path: Path) -> None:
    server = _server(tmp_path)
    assert unservable(server, repository, None) == {  # type: ignore[arg-type]
        "Detector": "backend 'onnxruntime'",
        "Plan": "backend 'tensorrt'",
        "Pipeline": "step 'Detector'",
        "Outer": "step 'Pipeline'",
    }
    assert unservable(server, repository, ["Pre", "Plan"]) == {"Plan": "backend 'tensorrt'"}  # type: ignore[arg-type]


def test_the_rest_is_loaded_explicitly(repository: Path, tmp_path: Path) -> None:
    server = _server(tmp_path, ("--exit-on-error=false", "--model-control-mode=explicit", "--load-model=Detector"))
    lines: list[str] = []
    skipped = unservable(server, repository, None)  # type: ignore[arg-type]
    rest = serve_without(server, repository, skipped, None, "2.51.0", lines.append)  # type: ignore[arg-type]
    assert rest == ["Fine", "Pre"]
    assert server.extra_args == (
        "--exit-on-error=false", "--model-control-mode=explicit", "--load-model=Fine", "--load-model=Pre",
    )  # fmt: skip
    assert lines == [
        "Not serving 4 model(s): Detector needs backend 'onnxruntime'; Plan needs backend 'tensorrt'; Pipeline needs "
        "step 'Detector'; Outer needs step 'Pipeline', and this tritonserver (2.51.0, embedded) has only the backends "
        "python. Serve them on a server with those backends (an NGC tritonserver container, or --tritonserver PATH), "
        'or build ONNX models with models.onnx(..., backend="python") to serve them here. Serving the other 2 under '
        "explicit model control."
    ]


def test_nothing_left_to_serve_is_an_error(repository: Path, tmp_path: Path) -> None:
    server = _server(tmp_path)
    skipped = unservable(server, repository, ["Detector"])  # type: ignore[arg-type]
    with pytest.raises(
        ServeError, match=r"no model of .*repo can be served here: Detector needs backend 'onnxruntime'"
    ):
        serve_without(server, repository, skipped, ["Detector"], "2.51.0", print)  # type: ignore[arg-type]
