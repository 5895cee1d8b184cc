"""A Prometheus counter of the requests a model's callable failed, on every release.

Measured with a hand-written model beside ours: tritonserver 2.39 and 2.41 count an error response
as a failed request (statistics ``fail``, ``nv_inference_request_failure``), but 2.51 counts it as a
success, so a model whose callable fails every request shows no failure where alerts look. Raising
from ``execute`` would be counted, but fails every request of the batch with one message. So each
instance counts its error responses in ``repogen_inference_request_failure{model, version}`` through
the Python backend's custom metrics API, served on Triton's own metrics endpoint; instances of one
model add to the same series. ``repogen status`` reads it beside the statistics extension.

The family and its metric are never freed. Freed as the stub exits, they crash it (SIGSEGV in
``MetricFamily::~MetricFamily`` -> ``Metric::Clear``, which reaches for the stub being destroyed;
python_backend fixed it in PR #429, after every release we serve), so neither the user's ``atexit``
handlers nor Python's shutdown would run. Freed earlier, in ``finalize``, they would do worse: the
server counts references per family object, and every instance has its own family object around one
shared series, so the first instance to go would remove the series the others (and, during a reload,
the new instances) still increment. Left alone, the series lives as long as the server.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

from .contract import FAILURE_METRIC

FAILURE_HELP = "Number of failed inference requests: the model's callable raised, or its result was refused"
UNCOUNTED = f"failed requests are not counted in {FAILURE_METRIC}"
STILL = "; error responses still reach the clients, and tritonserver's own statistics count what they count"


class FailureCounter:
    """Counts error responses; does nothing where the backend has no custom metrics, and says why in ``problem``."""

    def __init__(self, pb_utils: Any, model: str, version: str):
        self._family: Any = None
        self._metric: Any = None
        self.problem: str | None = None
        """Why failures are not counted here, for the one warning the model logs at load (``runtime.internals``)."""
        family = getattr(pb_utils, "MetricFamily", None)
        if family is None or not hasattr(family, "COUNTER"):
            self.problem = f"{UNCOUNTED}: this release's triton_python_backend_utils has no MetricFamily.COUNTER{STILL}"
            return
        try:  # kept: a Metric outlived by its family fails on increment
            self._family = family(name=FAILURE_METRIC, description=FAILURE_HELP, kind=family.COUNTER)
            self._metric = self._family.Metric(labels={"model": model, "version": version})
            if not callable(getattr(self._metric, "increment", None)):
                raise AttributeError("its Metric has no increment()")
        except Exception as exc:  # metrics disabled (--allow-metrics=false), or the API moved: serving goes on
            self._family = self._metric = None
            self.problem = f"{UNCOUNTED}: making the metric failed ({type(exc).__name__}: {exc}){STILL}"
            return
        for kept in (self._family, self._metric):  # never freed: see the module's docstring
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))

    def add(self, requests: int) -> None:
        if self._metric is not None:
            with contextlib.suppress(Exception):  # never turn a counted failure into a crashed request
                self._metric.increment(requests)
