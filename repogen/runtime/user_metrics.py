"""Metrics of the user's own: counters, gauges and histograms a callable updates, served on Triton's metrics port.

Declared once, at module level, with prometheus_client's names and arguments::

    TOKENS = Counter("app_tokens", "Tokens generated", ["kind"])
    LATENCY = Histogram("app_step_seconds", "One step", ["step"], buckets=[0.01, 0.1, 1])

and updated from the callable (``TOKENS.labels(kind="word").inc(3)``, ``with LATENCY.labels(step="a").time():``).
The build finds the metrics each model's callables hold (pickling/picklers.py) and records their declarations in its
``model.json``; each instance creates their families through python_backend's custom metrics API
(``pb_utils.MetricFamily``) when it loads, so ``/metrics`` shows them from the start, each series labelled with
``model`` and ``version`` besides the user's labels (several instances of a model add to one series).

Families and series are never freed (runtime/metrics.py says why: freed as the stub exits they crash it, freed in
``finalize`` they remove series other instances, or a reload's new ones, still use): a counter keeps counting across
an unload and a reload, and a stopped server's stubs exit cleanly. Histograms need python_backend r24.08 (NGC 24.08,
tritonserver 2.49); on an older server a histogram is inert and its model says so once when it loads. Outside a
server (``models.local()``) every series counts in this process, and ``value()`` reads it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["Counter", "Gauge", "Histogram", "bind_metrics"]

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"
RESERVED_LABELS = ("model", "version")
"""Every series carries these, set by the runtime: the model and version whose instance updated it."""
RESERVED_PREFIXES = ("nv_", "repogen_")
"""Triton's own metrics and the runtime's."""
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""prometheus_client's default buckets (seconds)."""
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class _Bound:
    """This process's families (by metric name), and the model and version whose series it updates."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.backend: Any = None
        self.model = ""
        self.version = ""
        self.families: dict[str, Any] = {}
        self.inert: dict[str, str] = {}  # metric name -> why it is not served here


_bound = _Bound()


class Metric:
    """A family of series: ``labels(...)`` names one; without labels, the metric is its only series."""

    kind = ""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (), **options: Any):
        _check_name(name)
        if not isinstance(documentation, str) or not documentation.strip():
            raise ValueError(
                f"metric {name!r}: give it a documentation string (its HELP line), found {documentation!r}"
            )
        names = tuple(labelnames)
        for label in names:
            _check_label(name, label)
        if len(set(names)) != len(names):
            raise ValueError(f"metric {name!r}: label names {list(names)} repeat")
        if options:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) {sorted(options)}")
        self.name, self.documentation, self.labelnames = name, documentation, names
        self._series: dict[tuple[str, ...], _Series] = {}
        self._lock = threading.Lock()

    def declaration(self) -> dict[str, Any]:
        """What ``model.json`` records of it (and the build compares across models)."""
        return {"kind": self.kind, "name": self.name, "documentation": self.documentation,
                "labels": list(self.labelnames)}  # fmt: skip

    def labels(self, *values: Any, **named: Any) -> Any:
        """The series of these label values, by position or by name (prometheus_client's ``labels``)."""
        if values and named:
            raise ValueError(f"metric {self.name!r}: give label values by position or by name, not both")
        if named:
            if sorted(named) != sorted(self.labelnames):
                raise ValueError(
                    f"metric {self.name!r}: expected labels {list(self.labelnames)}, found {sorted(named)}"
                )
            values = tuple(named[label] for label in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(
                f"metric {self.name!r}: expected {len(self.labelnames)} label value(s) {list(self.labelnames)}, "
                f"found {len(values)}"
            )
        key = tuple(str(value) for value in values)
        series = self._series.get(key)
        if series is None:
            with self._lock:
                series = self._series.get(key) or self._series.setdefault(key, self._new(key))
        return series

    def _only(self) -> Any:
        if self.labelnames:
            raise ValueError(f"metric {self.name!r} has labels {list(self.labelnames)}: update .labels(...) of it")
        return self.labels()

    def _new(self, key: tuple[str, ...]) -> _Series:
        return _Series(self, dict(zip(self.labelnames, key, strict=True)))

    def _args(self) -> tuple[Any, ...]:
        return (self.name, self.documentation, self.labelnames)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._args())  # the declaration only: a copy's series are its process's own

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class _Series:
    """One series: the backend's metric where this process serves the family, else a value counted here."""

    def __init__(self, metric: Metric, labels: dict[str, str]):
        self.metric, self.labels = metric, labels
        self.local = 0.0
        self._backend: Any = None
        self._made = False

    def backend(self) -> Any:
        if not self._made:
            self._made = True
            self._backend = _backend_metric(self.metric, self.labels)
        return self._backend

    def value(self) -> float:
        """The series' value: the server's where it serves it (a counter or gauge), else this process's count."""
        backend = self.backend()
        if backend is not None and self.metric.kind != HISTOGRAM:
            with contextlib.suppress(Exception):
                return float(backend.value())
        return self.local


class _CounterSeries(_Series):
    def inc(self, amount: float = 1.0) -> None:
        if amount < 0 or math.isnan(amount):
            raise ValueError(f"counter {self.metric.name!r} only goes up: inc({amount!r}); use a Gauge to go down")
        self.local += amount
        backend = self.backend()
        if backend is not None:
            backend.increment(float(amount))


class _GaugeSeries(_Series):
    def set(self, value: float) -> None:
        self.local = float(value)
        backend = self.backend()
        if backend is not None:
            backend.set(float(value))

    def inc(self, amount: float = 1.0) -> None:
        self.local += amount
        backend = self.backend()
        if backend is not None:
            backend.increment(float(amount))

    def dec(self, amount: float = 1.0) -> None:
        self.inc(-amount)


class _HistogramSeries(_Series):
    def __init__(self, metric: Metric, labels: dict[str, str]):
        super().__init__(metric, labels)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        self.local = self.sum
        backend = self.backend()
        if backend is not None:
            backend.observe(float(value))

    @contextlib.contextmanager
    def time(self) -> Iterator[None]:
        """Observe the seconds the block takes (an exception's too)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - start)


class Counter(Metric):
    """A count that only goes up (tokens produced, cache misses): ``inc(amount=1)``. Served as a Prometheus
    counter under its name as given (Triton's custom metrics add no ``_total``)."""

    kind = COUNTER

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)

    def value(self) -> float:
        return float(self._only().value())

    def _new(self, key: tuple[str, ...]) -> _Series:
        return _CounterSeries(self, dict(zip(self.labelnames, key, strict=True)))


class Gauge(Metric):
    """A value that goes up and down (items queued, a model's temperature): ``set``, ``inc``, ``dec``."""

    kind = GAUGE

    def set(self, value: float) -> None:
        self._only().set(value)

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._only().dec(amount)

    def value(self) -> float:
        return float(self._only().value())

    def _new(self, key: tuple[str, ...]) -> _Series:
        return _GaugeSeries(self, dict(zip(self.labelnames, key, strict=True)))


class Histogram(Metric):
    """Observations counted into buckets (latencies, sizes): ``observe(value)``, ``with h.time():``. ``buckets``:
    the upper bounds, increasing (``+Inf`` is added); prometheus_client's default ones when left out. Served from
    python_backend r24.08 (NGC 24.08) on; inert on older servers."""

    kind = HISTOGRAM

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS
    ):
        super().__init__(name, documentation, labelnames)
        bounds = [float(b) for b in buckets if not math.isinf(float(b))]
        if not bounds or any(math.isnan(b) for b in bounds) or bounds != sorted(set(bounds)):
            raise ValueError(f"histogram {name!r}: buckets must be increasing numbers, found {list(buckets)}")
        self.buckets = tuple(bounds)

    def declaration(self) -> dict[str, Any]:
        return {**super().declaration(), "buckets": list(self.buckets)}

    def observe(self, value: float) -> None:
        self._only().observe(value)

    def time(self) -> Any:
        return self._only().time()

    def _args(self) -> tuple[Any, ...]:
        return (*super()._args(), self.buckets)

    def _new(self, key: tuple[str, ...]) -> _Series:
        return _HistogramSeries(self, dict(zip(self.labelnames, key, strict=True)))


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"metric name {name!r}: expected letters, digits, '_' and ':', not starting with a digit")
    for prefix in RESERVED_PREFIXES:
        if name.startswith(prefix):
            raise ValueError(f"metric name {name!r}: names starting {prefix!r} are Triton's and repogen's own")


def _check_label(metric: str, label: Any) -> None:
    if not isinstance(label, str) or not _LABEL.match(label) or label.startswith("__"):
        raise ValueError(f"metric {metric!r}: label name {label!r} is not a Prometheus label name")
    if label in RESERVED_LABELS:
        raise ValueError(f"metric {metric!r}: label {label!r} is set by the runtime (the model's {label}); rename it")


def bind_metrics(backend: Any, model: str, version: str, declarations: Sequence[dict[str, Any]]) -> list[str]:
    """Create this instance's families (``model.json``'s declarations); return why any is not served, a line each."""
    family: Any = getattr(backend, "MetricFamily", None)
    problems = []
    with _bound.lock:
        _bound.backend, _bound.model, _bound.version = backend, model, str(version)
        for declared in declarations:
            name, kind = str(declared.get("name")), str(declared.get("kind"))
            if name in _bound.families or name in _bound.inert:
                continue
            constant = getattr(family, kind.upper(), None) if family is not None else None
            if constant is None:
                why = (
                    "this tritonserver's Python backend has no histograms (python_backend r24.08, NGC 24.08, on)"
                    if kind == HISTOGRAM and family is not None
                    else "this tritonserver's Python backend has no custom metrics"
                )
                _bound.inert[name] = why
                problems.append(f"metric {name!r} ({kind}) is not served: {why}")
                continue
            try:
                made = family(name=name, description=str(declared.get("documentation", "")), kind=constant)
            except Exception as exc:  # metrics off (--allow-metrics=false), a clash with another model's family
                _bound.inert[name] = f"{type(exc).__name__}: {exc}"
                problems.append(f"metric {name!r} is not served: {type(exc).__name__}: {exc}")
                continue
            _keep(made)
            _bound.families[name] = made
    return problems


def _backend_metric(metric: Metric, labels: dict[str, str]) -> Any:
    """The backend's metric of one series, made once and kept; None where this process serves no such family."""
    family = _bound.families.get(metric.name)
    if family is None and _bound.backend is not None and metric.name not in _bound.inert:
        for line in bind_metrics(_bound.backend, _bound.model, _bound.version, [metric.declaration()]):
            from .failures import log  # the server's log; imported only inside the server

            log("log_warn", f"model '{_bound.model}': {line}")  # made in the server, not declared in model.json
        family = _bound.families.get(metric.name)
    if family is None:
        return None
    full = {**labels, "model": _bound.model, "version": _bound.version}
    try:
        made = (
            family.Metric(labels=full, buckets=list(getattr(metric, "buckets", ())))
            if metric.kind == HISTOGRAM
            else family.Metric(labels=full)
        )
    except Exception:  # the server refused it: the series counts here only (its family's problem was logged)
        return None
    _keep(made)
    return made


def _keep(obj: Any) -> None:
    """Never freed (the module's docstring says why)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
