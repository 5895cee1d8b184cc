"""What newer python_backends change for a generated model, each with the first NGC release that has it.

Read at python_backend's release branches (``git show r25.08:src/stub_launcher.cc``); each fact is
used by a build-time check, a runtime adaptation or the docs (docs/releases.md):

* before r24.04: a stub's shared-memory region is ``triton_python_backend_shm_region_<n>``, ``<n>``
  counting the server's instance inits from 1, so two servers on one host (one ``/dev/shm``) create
  the same names and corrupt each other's regions (``boost::interprocess::lock_exception``, an abort);
  r24.04 names them by UUID. ``--backend-config=python,shm-region-prefix-name=...`` gives each server
  its own prefix (:func:`region_prefix_args`).
* r24.04: ``InferenceTrace.get_context()``, the request's OpenTelemetry context (W3C ``traceparent``), which a
  callable's own spans hang under (runtime/tracing.py); a BLS request carries ``trace=request.trace()`` on every
  release (r23.10 has the keyword).
* r24.08 (#374 on main for r24.09, picked into r24.08 as #376; core's ``TRITONSERVER_METRIC_KIND_HISTOGRAM`` is
  r24.08 too): ``MetricFamily.HISTOGRAM`` (``Metric(labels, buckets)``, ``observe``); COUNTER and GAUGE are older
  than r23.10. A callable's histogram is refused for an older target (runtime/user_metrics.py).
* r24.08 (#371): BF16 tensors, through DLPack (``Tensor.from_dlpack``/``to_dlpack``; numpy has no bfloat16).
  Before, a Python model with a ``TYPE_BF16`` input or output loads, but the stub refuses each request with
  "TYPE_BF16 not currently supported." (measured on 2.39 and 2.41; tests/integration/test_stub_dlpack.py).
* r25.08 (#404): the stub refuses to start for a model instance whose name (``<model>_<group>_<n>``,
  or the model's own name for the auto-complete stub) contains one of :data:`INVALID_NAME_CHARS`
  ("Invalid stub name: contains invalid characters"), and launches the stub with ``execv`` instead
  of a shell; an ``EXECUTION_ENV_PATH``'s ``bin/activate`` is no longer sourced (its variables are
  derived instead). repogen ships packages inside the model, so only the name rule touches it.
* r25.12 (#423): a dead stub fails the model's ready endpoint (``TRITONBACKEND_ModelInstanceReady``):
  before it only an inference finds out (2.39/2.41 restart the stub, 2.51-25.11 never do).
* r26.03 (#430): ``TritonPythonModel.is_ready()``, when the loaded model object has it, answers
  ``/v2/models/<model>/ready`` (5 s timeout; must return a bool; may be ``async``).
* r26.06 (#437): an ``EXECUTION_ENV_PATH`` archive whose members point outside it is refused.
"""

from __future__ import annotations

from .releases import Release, get_release

__all__ = [
    "ASYNC_DECOUPLED_FROM",
    "BF16_FROM",
    "BLS_ERROR_CODES_FROM",
    "DEAD_STUB_FAILS_READY_FROM",
    "INVALID_NAME_CHARS",
    "HISTOGRAM_FROM",
    "IS_READY_FROM",
    "TRACE_CONTEXT_FROM",
    "NAME_CHECK_FROM",
    "SENDER_IN_DEFAULT_MODE_FROM",
    "bf16_refusal",
    "has_bf16",
    "has_histograms",
    "has_is_ready",
    "invalid_characters",
    "name_warnings",
    "ready_detects_dead_stub",
    "refused_name",
    "region_prefix_args",
    "serves_async_concurrently",
]

INVALID_NAME_CHARS = ";|&$`<>()[]{}\\\"'*?~#!"
"""python_backend's ``INVALID_CHARS`` (src/pb_utils.h, r25.08): none may appear in a stub's name."""
BF16_FROM = "24.08"
NAME_CHECK_FROM = "25.08"
UUID_REGIONS_FROM = "24.04"
DEAD_STUB_FAILS_READY_FROM = "25.12"
IS_READY_FROM = "26.03"
ASYNC_DECOUPLED_FROM = "24.04"
"""python_backend #350: a decoupled model's coroutines run concurrently (its stub's own event loop)."""
SENDER_IN_DEFAULT_MODE_FROM = "24.06"
"""python_backend #364: a non-decoupled request may be answered through its response sender after ``execute``."""
BLS_ERROR_CODES_FROM = "25.04"
"""python_backend #398: a BLS response's error keeps the called model's code (INTERNAL before, whatever it was)."""
HISTOGRAM_FROM = "24.08"
TRACE_CONTEXT_FROM = "24.04"


def _from(release: str | Release, first: str) -> bool:
    return get_release(release).version >= get_release(first).version


def invalid_characters(name: str) -> str:
    """The characters of ``name`` that python_backend r25.08+ refuses in a stub's name, in order, once each."""
    return "".join(dict.fromkeys(c for c in name if c in INVALID_NAME_CHARS))


def _name_problem(name: str, what: str = "model") -> str | None:
    bad = invalid_characters(name)
    if not bad:
        return None
    first = get_release(NAME_CHECK_FROM)
    return (
        f"{what} name {name!r} contains {' '.join(repr(c) for c in bad)}, which python_backend refuses in a model "
        f'instance\'s name from {first.label} on ("Invalid stub name: contains invalid characters"); rename it '
        "(letters, digits, '_', '-' and '.' load everywhere)"
    )


def refused_name(name: str, release: str | Release, what: str = "model") -> str | None:
    """Why ``release`` refuses to start the stub of a Python model called ``name``; None when it does not."""
    return _name_problem(name, what) if _from(release, NAME_CHECK_FROM) else None


def name_warnings(name: str, release: str | Release, what: str = "model") -> list[str]:
    """A name ``release`` loads but 25.08 and later refuse: repositories move between releases."""
    problem = None if _from(release, NAME_CHECK_FROM) else _name_problem(name, what)
    return [f"{problem}; {get_release(release).label} still loads it"] if problem else []


def region_prefix_args(release: str | Release, unique: str) -> list[str]:
    """The flag that keeps a server's shm regions apart from another's on the same host, where it is needed.

    ``unique`` tells this server apart (its pid and port); only letters, digits and ``_`` end up in the name.
    """
    if _from(release, UUID_REGIONS_FROM):
        return []
    token = "".join(c if c.isalnum() else "_" for c in unique)
    return [f"--backend-config=python,shm-region-prefix-name=repogen_{token}_"]


def ready_detects_dead_stub(release: str | Release) -> bool:
    """Whether ``/v2/models/<model>/ready`` fails once a model's stub died (else only an inference shows it)."""
    return _from(release, DEAD_STUB_FAILS_READY_FROM)


def has_is_ready(release: str | Release) -> bool:
    """Whether the Python backend asks a model's ``is_ready()`` when its ready endpoint is probed."""
    return _from(release, IS_READY_FROM)


def serves_async_concurrently(release: str | Release, decoupled: bool) -> bool:
    """Whether an async callable's requests can be in flight at once on one instance (repogen.runtime.concurrency)."""
    return _from(release, ASYNC_DECOUPLED_FROM if decoupled else SENDER_IN_DEFAULT_MODE_FROM)


def has_bf16(release: str | Release) -> bool:
    """Whether a Python model's stub takes and sends ``TYPE_BF16`` tensors (else it refuses every such request)."""
    return _from(release, BF16_FROM)


def has_histograms(release: str | Release) -> bool:
    """Whether the Python backend's custom metrics have histograms (``MetricFamily.HISTOGRAM``)."""
    return _from(release, HISTOGRAM_FROM)


def bf16_refusal(what: str, names: list[str]) -> str:
    """Why an older stub refuses a Python model's BF16 tensors (``what``: ``model 'M'``; ``names``: ``input 'x'``)."""
    first = get_release(BF16_FROM)
    return (
        f"{what}: {', '.join(names)} {'is' if len(names) == 1 else 'are'} BF16, which the Python backend takes "
        f"and sends from {first.label} on "
        f'(python_backend r{first.ngc}); older stubs refuse every request of the model ("TYPE_BF16 not currently '
        'supported.")'
    )
