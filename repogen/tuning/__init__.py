"""``repogen tune``: NVIDIA Model Analyzer on a built repository, its answer as ``ModelConfig`` arguments.

:mod:`analyzer_config` writes Model Analyzer's config (the embedded server, its environment, inputs from each
model's config), :mod:`run` runs it and stops everything it started, :mod:`results` reads its
ranking and turns the top config into what to write in app.py. Model Analyzer itself comes from PyPI
on first use, into a venv of its own (:mod:`repogen.server.provision.model_analyzer`).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TuneError, UsageError
from ..server.client.access_key import Access, new_token
from ..server.provision.install import ensure_server, ensure_server_venv, venv_info
from ..server.provision.model_analyzer import VERSION as MA_VERSION
from ..server.provision.model_analyzer import ensure_model_analyzer, model_analyzer_installed
from ..server.provision.perf_analyzer import ensure_perf_analyzer
from ..server.provision.pythons import container_python_or_current, require_python
from ..server.running.external import find_tritonserver
from ..server.running.pairing import pairing_for
from ..server.running.target import clear_scratch, repository_for
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED, Release, pairing_label
from ..triton.restricted_apis import DEFAULT_RESTRICTED, PROTOCOL_NAMES
from .analyzer_config import (
    MODEL_ANALYZER_OPEN,
    SearchBudget,
    ServerLaunch,
    analyzer_access,
    embedded_launch,
    given_launch,
    plan_tuning,
    skipped,
)
from .results import Recommendation, read_recommendation, report_lines
from .run import run_model_analyzer

__all__ = ["Recommendation", "SearchBudget", "TuneOptions", "report_lines", "tune", "tune_target"]

Echo = Callable[[str], None]


@dataclass(frozen=True)
class TuneOptions:
    release: Release | None = None
    """The embedded release; None: the one the repository's records ask for (:func:`tune_target`), else the default."""
    server_python: str | None = None
    models: tuple[str, ...] = ()
    shapes: dict[str, list[int]] = field(default_factory=dict)
    budget: SearchBudget = SearchBudget()
    timeout_s: float | None = None
    tritonserver: str | Path | None = None  # a tritonserver of the user's instead of the embedded one
    restrict: tuple[str, ...] = DEFAULT_RESTRICTED
    """The API groups to keep behind a key of the run's (less what Model Analyzer needs open: analyzer_config.py)."""

    def check(self) -> None:
        """Options that contradict each other, or a release tune cannot run, before anything is built."""
        if self.tritonserver and (self.release or self.server_python):
            raise UsageError(
                "--tritonserver runs the binary you name (with its own Python); --triton-release/--server-python "
                "select the embedded server. Pass one or the other."
            )
        release = self.release or DEFAULT_RELEASE
        if release not in EMBEDDED:
            raise UsageError(
                f"--triton-release {release.tritonserver}: tune runs the embedded server, which ships only "
                f"{', '.join(r.tritonserver for r in EMBEDDED)}."
            )


def tune_target(target: str, reports: Path, options: TuneOptions, echo: Echo) -> list[Recommendation]:
    """``repogen tune TARGET``: an app is built first, into scratch space removed however the run ends; the
    embedded pairing is the one the repository's records ask for unless ``options`` name a server.

    Raises :class:`TuneError` when Model Analyzer measured nothing.
    """
    options.check()
    if options.tritonserver:
        options = dataclasses.replace(options, tritonserver=find_tritonserver(str(options.tritonserver)))
    scratch = Path(tempfile.mkdtemp(prefix="repogen-tune-build-"))
    try:
        repository, _ = repository_for(target, scratch / "model_repository", None, echo)
        found = tune(repository, reports, _paired(options, repository, echo), echo)
    finally:
        clear_scratch(scratch)
    if not found:
        raise TuneError("Model Analyzer measured nothing.")
    return found


def _paired(options: TuneOptions, repository: Path, echo: Echo) -> TuneOptions:
    """The embedded pairing the repository's records ask for, unless the options name a server."""
    if options.release or options.server_python or options.tritonserver:
        return options
    pick = pairing_for(repository)
    if pick is None:
        return options
    echo(f"{pick.why}, so the embedded server runs it on Python {pick.python}.")
    return dataclasses.replace(options, release=pick.release, server_python=pick.python)


def tune(repository: Path, reports: Path, options: TuneOptions, echo: Echo) -> list[Recommendation]:
    """Profile ``repository``'s models with Model Analyzer; its reports and each config measured land in ``reports``."""
    server, label = _server(options, echo)
    perf = ensure_perf_analyzer()
    if not model_analyzer_installed():
        echo(f"Installing Model Analyzer {MA_VERSION} into the cache (once, ~600 MB)...")
    analyzer = ensure_model_analyzer()
    if not options.models:
        for name, why in skipped(repository):
            echo(f"Skipping {name}: it {why}")
    # A directory no command line of the user's names: everything that mentions it was started by this run.
    workdir = Path(tempfile.mkdtemp(prefix="repogen-tune-"))
    try:
        access = analyzer_access(Access.choose(options.restrict, new_token()))
        echo(_access_line(access, options.restrict, server))
        plan = plan_tuning(
            repository, workdir, server, perf, options.budget, options.models, options.shapes, access
        )  # fmt: skip
        budget = options.budget
        echo(
            f"Tuning {', '.join(plan.models)} with Model Analyzer ({budget.mode} search: up to {budget.max_instances} "
            f"instances, max batch size up to {budget.max_batch_size}, concurrency up to {budget.max_concurrency}) "
            f"on {label}..."
        )
        try:
            run_model_analyzer(analyzer.executable, plan, echo, reports, options.timeout_s)
        finally:
            _keep(plan.workdir, reports, access.token if access else None)
        return [read_recommendation(reports, reports / "configs", repository, name) for name in plan.models]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _server(options: TuneOptions, echo: Echo) -> tuple[ServerLaunch, str]:
    """The user's ``--tritonserver`` as it is, else the embedded release with its container's Python."""
    if options.tritonserver is not None:
        return given_launch(Path(options.tritonserver)), str(options.tritonserver)
    release = options.release or DEFAULT_RELEASE
    if options.server_python:
        python, version, note = require_python(options.server_python), options.server_python, None
    else:
        python, version, note = container_python_or_current(release)
    if note:
        echo(note)
    install = ensure_server(release)
    venv = venv_info(ensure_server_venv(python=python, numpy=release.numpy))
    return embedded_launch(install, venv), pairing_label(release, version)


def _access_line(access: Access | None, restrict: tuple[str, ...], server: ServerLaunch) -> str:
    """What Model Analyzer's server keeps behind the run's key, and what stays open, in one line."""
    if access is None:
        kept = ", ".join(a for a in restrict if a in MODEL_ANALYZER_OPEN)
        why = f" ({kept}: Model Analyzer sends no key)" if kept else ""
        return f"Model Analyzer's server keeps no API behind a key{why}; it listens on 127.0.0.1 only."
    missing = [protocol for protocol, can in server.restricts.items() if not can]
    line = (
        f"Model Analyzer's server keeps {', '.join(access.apis)} behind a key of this run, which perf_analyzer "
        f"sends; {', '.join(MODEL_ANALYZER_OPEN)} stay open to 127.0.0.1 (Model Analyzer's own calls send no key)"
    )
    if missing:
        line += f"; this tritonserver cannot restrict {' or '.join(PROTOCOL_NAMES[m] for m in missing)}"
    return line + "."


def _keep(workdir: Path, reports: Path, token: str | None = None) -> None:
    """Model Analyzer's reports, logs and config, and each measured variant's config.pbtxt (not its files).

    The run's key is written out of the config and logs kept (its server is gone; the files may be shared)."""
    if reports.exists():
        shutil.rmtree(reports)
    if (workdir / "reports").is_dir():
        shutil.copytree(workdir / "reports", reports)
    reports.mkdir(parents=True, exist_ok=True)
    for name in ("model-analyzer.yaml", "model-analyzer.log", "tritonserver.log"):
        if (workdir / name).is_file():
            shutil.copy2(workdir / name, reports / name)
            if token:
                text = (reports / name).read_text(errors="replace")
                (reports / name).write_text(text.replace(token, "<the run's access key>"))
    for config in sorted((workdir / "variants").glob("*/config.pbtxt")):
        (reports / "configs" / config.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy2(config, reports / "configs" / config.parent.name / "config.pbtxt")
