"""Each model version carries the runtime modules its model can reach (repogen/emit/vendoring.py), and loads from them.

A numpy ``@batch`` model's version directory once held the whole runtime and cloudpickle (340 KiB in 44 files at
072046a): every model of a repository, copied file by file wherever it travels. Now it holds what its model.py
imports, what its payload names and what its features use; each build below is loaded from its own files alone
(repogen/testing/carried.py), so a module left out that a model needs fails here, not in the server.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repogen import Counter, ModelConfig, Repository, Tensor, batch, build_app, build_repository, factory
from repogen.emit import vendoring
from repogen.packages import PackageOptions
from repogen.testing.carried import carried_modules, load_problems

HERE = (str(Path(__file__).parent),)
QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "app.py"
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
BATCHED = ModelConfig(max_batch_size=8)
EVERY_MODEL = {"__init__", "triton_model", "payload", "contract", "tensors", "conversion", "context", "errors"}
OPTIONAL = set(vendoring.OPTIONAL)
_CALLS = Counter("vendoring_calls", "calls of _counts")


@batch
def _double(x):
    return {"y": np.multiply(x, 2)}  # np: a module the payload names (the runtime's subimport, not cloudpickle's)


def _countdown(requests):
    for step in range(2):
        yield [{"y": np.full(1, step, dtype=np.float32)} for _ in requests]


class _Counter:  # pickled by value: cloudpickle's class helpers travel with it
    def __init__(self) -> None:
        self.calls = 0

    @batch
    def __call__(self, x):
        self.calls += 1
        return {"y": x}

    def is_ready(self) -> bool:
        return True


async def _waits(requests):  # async: served concurrently (runtime/concurrency.py)
    return [{"y": r["x"]} for r in requests]


def _counts(requests):  # holds a metric: runtime/user_metrics.py binds it at load
    _CALLS.inc()
    return [{"y": r["x"]} for r in requests]


def _uses_repogen(requests):
    import repogen  # the whole runtime: its lazy names reach any module

    return [{"y": np.asarray(repogen.__name__ and r["x"])} for r in requests]


def _built(tmp_path: Path, repo: Repository) -> Path:
    out = tmp_path / "repo"
    build_repository(repo, out, roots=HERE, packages=PackageOptions(mode="record"))
    return out


_carried = carried_modules  # runtime module names, as emit/vendoring.py gives them


def _content_kib(version_dir: Path) -> float:
    return sum(p.stat().st_size for p in version_dir.rglob("*") if p.is_file()) / 1024


def test_a_numpy_batch_models_version_holds_under_150_kib_and_loads_from_it(tmp_path: Path) -> None:
    """The README's quickstart: AddSub (no module global) and Shout (``np`` in its body). 148 KiB before main's
    operations (issues 58, 59: tracing.py, server_flags.py, requested.py and the error codes every model carries),
    184 KiB after; 162 KiB in 26 files once tracing.py and server_flags.py travel only with the models that use them
    and a stream's cancellation (stream_cancellation.py) only with the models that stream; 169.2 KiB in 25 once the
    contract took the dtypes, flags and package trees (main 32027ad). 160.9 KiB (AddSub; Shout 160.7) in 25 files
    once the package trees (package_trees.py) and the tritonserver flags (tritonserver_flags.py) left the contract,
    runtime/__init__.py's lazy names travel only with a payload that refers to the package, and a framework's
    output checks live in frameworks.py. 149.2 KiB (AddSub; Shout 149.0) in 25 files, issue 60's goal, once what
    only some models run left the modules every model carries: stopping on the unrecoverable error
    (unrecoverable.py), a BLS call's errors (call_errors.py), rebuilding namedtuples and dataclasses
    (portable_classes.py), the GPU out-of-memory answer and a framework's input reader (frameworks.py,
    transfers.py), tensor helpers of fused steps and optional decorators (fused.py, batch_decorators.py,
    optional_inputs.py), a stream's asking at its steps (stream_cancellation.py) and its barrier's load check
    (streams.py). 149.9 KiB (Shout 149.8) once a strict output remembers the shapes it checked and a lone GPU output
    leaves in fewer steps (issue 57's token streams, 2026-11-30)."""
    out = tmp_path / "repo"
    build_app(f"{QUICKSTART}:models", out, packages=PackageOptions(mode="record"))
    for model in ("AddSub", "Shout"):
        version = out / model / "1"
        assert _content_kib(version) < 150, sorted((p.stat().st_size, p.name) for p in version.rglob("*.py"))
        assert not (version / "cloudpickle").exists()
        carried = _carried(version)
        assert EVERY_MODEL | {"request_decorators", "portable"} <= carried
        assert not carried & (OPTIONAL | {"bls", "decorators", "batch_decorators", "onnx_session", "devices"})
        assert not carried & {"tracing", "server_flags", "stream_cancellation"}
        assert not carried & {"contract.package_trees", "contract.tritonserver_flags"}  # the contract's parts
        assert not carried & {"unrecoverable", "call_errors", "portable_classes"}
        assert b"_HOMES" not in (version / "repogen" / "runtime" / "__init__.py").read_bytes()  # no lazy names
    assert load_problems(out) == {}


@pytest.mark.filterwarnings("ignore::repogen.emit.release_rules.ReleaseRuleWarning")  # Counter's is_ready, from 26.03
def test_each_feature_brings_its_modules_and_only_its_models_carry_them(tmp_path: Path) -> None:
    repo = Repository()
    repo.bind("Double", infer_func=_double, inputs=X, outputs=Y, config=BATCHED)
    repo.bind("Stream", infer_func=_countdown, inputs=X, outputs=Y, config=ModelConfig(decoupled=True))
    repo.bind("Counter", infer_func=_Counter, inputs=X, outputs=Y, config=BATCHED)
    repo.bind("Made", infer_func=factory(lambda context: _double), inputs=X, outputs=Y, config=BATCHED)
    repo.bind("Whole", infer_func=_uses_repogen, inputs=X, outputs=Y)
    repo.bind("Waits", infer_func=_waits, inputs=X, outputs=Y)
    repo.bind("Counts", infer_func=_counts, inputs=X, outputs=Y)
    out = _built(tmp_path, repo)
    names = ("Double", "Stream", "Counter", "Made", "Whole", "Waits", "Counts")
    carried = {name: _carried(out / name / "1") for name in names}
    assert carried["Double"] & OPTIONAL == set()
    assert carried["Stream"] & OPTIONAL == {"decoupled"}
    assert carried["Counter"] & OPTIONAL == {"readiness"}  # it defines is_ready
    serving = {"concurrency", "decoupled", "streams", "tracing"}  # concurrency.py imports the others
    assert carried["Made"] & OPTIONAL == {"readiness", *serving}  # what a factory makes may define is_ready, be async
    assert carried["Waits"] & OPTIONAL == serving
    assert carried["Counts"] & OPTIONAL == {"user_metrics"}
    assert carried["Whole"] == set(vendoring.runtime_modules())
    whole_init = (out / "Whole" / "1" / "repogen" / "runtime" / "__init__.py").read_bytes()
    assert whole_init == (Path(vendoring.__file__).parents[1] / "runtime" / "__init__.py").read_bytes()  # lazy names
    assert [name for name in carried if (out / name / "1" / "cloudpickle").is_dir()] == ["Counter"]
    assert load_problems(out) == {}


_SPAN = "traced" + "_span"  # spelt apart: a source naming it carries tracing.py, and this file ships with its models
_APPS = {
    "plain_app": "def double(requests):\n    return [{'y': r['x'] * 2} for r in requests]\n",
    "traced_app": f"def double(requests):\n    with requests[0].{_SPAN}('double'):\n"
    "        return [{'y': r['x'] * 2} for r in requests]\n",
}


def test_tracing_and_server_flags_travel_only_with_the_models_that_use_them(tmp_path: Path, monkeypatch) -> None:
    """tritonserver traces the models it runs by itself (--trace-config); runtime/tracing.py only opens a callable's
    own spans and carries a BLS call's trace, so a model whose code (its payload, its shipped sources) never names
    the span opener carries none of it. A model the server must be started for (response cache, rate limiter, a
    GPU's CUDA pool) carries server_flags.py, whose first instance says which flag its server lacks."""
    import importlib

    from repogen import InstanceGroup, RateLimiter

    for name, source in _APPS.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    plain, traced = (importlib.import_module(name).double for name in _APPS)
    limited = InstanceGroup(count=1, kind="KIND_CPU", rate_limiter=RateLimiter(resources={"R": 1}))
    repo = Repository()
    repo.bind("Plain", infer_func=plain, inputs=X, outputs=Y)
    repo.bind("Traces", infer_func=traced, inputs=X, outputs=Y)
    repo.bind("Cached", infer_func=plain, inputs=X, outputs=Y, config=ModelConfig(response_cache=True))
    repo.bind("Limited", infer_func=plain, inputs=X, outputs=Y, config=ModelConfig(instance_groups=[limited]))
    out = tmp_path / "repo"
    build_repository(repo, out, roots=(str(tmp_path),), packages=PackageOptions(mode="record"))
    names = ("Plain", "Traces", "Cached", "Limited")
    carried = {name: _carried(out / name / "1") & {"tracing", "server_flags"} for name in names}
    assert carried == {"Plain": set(), "Traces": {"tracing"}, "Cached": {"server_flags"}, "Limited": {"server_flags"}}
    assert load_problems(out) == {}


_UNRECOVERABLE = "PyTriton" + "UnrecoverableError"  # spelt apart, as _SPAN: this file ships with its models
_FATAL_APPS = {
    "calm_app": "def double(requests):\n    return [{'y': r['x'] * 2} for r in requests]\n",
    "fatal_app": f"from repogen import {_UNRECOVERABLE}\n\n\ndef double(requests):\n"
    f"    raise {_UNRECOVERABLE}('weights are corrupt')\n",
}


def test_stopping_on_an_unrecoverable_error_travels_only_with_the_models_whose_code_names_it(
    tmp_path: Path, monkeypatch
) -> None:
    """runtime/unrecoverable.py (stopping the server, refusing every request after) runs only once a callable
    raised the unrecoverable error: a model whose payload and sources never name it carries none of it; one whose
    code raises it does, and answers as every model did before (tests/unit/runtime/test_faults.py, served:
    tests/integration/test_faults_served.py). Checked: with the rule's name misspelt in emit/vendoring.py, Fatal
    carries no unrecoverable.py and this fails. This file names the error only spelt apart: it ships with its
    models, and every one of them would carry the module."""
    import importlib

    for name, source in _FATAL_APPS.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    calm, fatal = (importlib.import_module(name).double for name in _FATAL_APPS)
    repo = Repository()
    repo.bind("Calm", infer_func=calm, inputs=X, outputs=Y)
    repo.bind("Fatal", infer_func=fatal, inputs=X, outputs=Y)
    out = tmp_path / "repo"
    build_repository(repo, out, roots=(str(tmp_path),), packages=PackageOptions(mode="record"))
    assert "unrecoverable" not in _carried(out / "Calm" / "1")
    assert "unrecoverable" in _carried(out / "Fatal" / "1")
    assert _UNRECOVERABLE.encode() in (out / "Fatal" / "1" / "model.pkl").read_bytes()  # named by reference too
    assert load_problems(out) == {}


def test_a_model_on_another_frameworks_tensors_carries_them(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # `make frameworks`
    repo = Repository()
    config = ModelConfig(max_batch_size=8, tensors="torch")
    repo.bind("Torch", infer_func=_double, inputs=X, outputs=Y, config=config)
    out = _built(tmp_path, repo)
    assert {"frameworks", "devices", "transfers"} <= _carried(out / "Torch" / "1")
    assert (out / "Torch" / "1" / "cloudpickle").is_dir()  # third-party code may import it (joblib's loky does)
    assert load_problems(out) == {}


def test_every_import_inside_a_runtime_function_is_optional_or_carried_by_every_model() -> None:
    """The runtime's lazy imports are its optional parts: each is in vendoring.OPTIONAL (and the build decides who
    carries it) or is a module every model carries anyway."""
    modules = vendoring.runtime_modules()
    assert set(modules) >= OPTIONAL
    every_model = vendoring.reached({"__init__", "triton_model"})
    assert every_model >= EVERY_MODEL
    lazy = {module: vendoring.imported_lazily(module) - every_model - OPTIONAL for module in modules}
    assert {module: found for module, found in lazy.items() if found} == {}
    assert not OPTIONAL & every_model, "an optional module that every model reaches anyway is not optional"


def test_pickled_globals_are_read_from_the_opcodes() -> None:
    import pickle

    data = pickle.dumps([np.float32, Path, {"again": np.float32}], protocol=4)
    assert {("numpy", "float32"), ("pathlib", "Path")} <= vendoring.pickle_globals(data)
