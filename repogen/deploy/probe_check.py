"""The liveness check a deployed container runs: one small real inference per model.

tritonserver 2.51 (NGC 24.10) never restarts a backend stub that died and keeps answering
``/v2/health/live`` and ``/v2/health/ready`` with 200, so a health check on those endpoints keeps a
server whose models all fail "Stub process '<model>_0_0' is not healthy" in service forever. This
check sends each model the request :mod:`repogen.deploy.probe` derived from its config and fails
when a model does not answer: a dead or unhealthy stub, a model no longer loaded, no answer in time.
A model that answers with its own error (it rejects the probe's zeros) is alive: that is not a
reason to restart the container.

Standard library only, written to run as ``python3 -c`` inside the stock NGC image (its Python),
and imported by ``repogen status``. Arguments: the server's base URL, the probes as JSON, and, where
the deployment keeps inference or health behind the access key, the header to send it in and the
environment variable that holds it. A probe without a body is a GET that must answer 200 (the
readiness check, where health needs the key and Kubernetes' ``httpGet`` cannot send it).
"""

import json
import os
import sys
import urllib.error
import urllib.request

# What tritonserver says when a model cannot answer at all (a model's own errors never say these).
DEAD = ("is not healthy", "Request for unknown model", "has no available versions", "is not ready")


# How tritonserver refuses a request without the access key: then the probe itself is wrong, never the model.
REFUSED = ("This API is restricted",)


def answer(base, probe, timeout, headers=None):
    """None when the model answered (its result or its own error), else why it did not."""
    body = json.dumps(probe["body"]).encode() if "body" in probe else None
    sent = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(base + probe["path"], body, sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        if body is None or any(marker in text for marker in REFUSED):
            return f"HTTP {exc.code} {' '.join(text.split())[:300]}".rstrip()
    except Exception as exc:  # refused, reset, timed out: the server did not answer
        return f"no answer ({exc})"
    dead = [marker for marker in DEAD if marker in text]
    return " ".join(text.split())[:300] if dead else None


def check(base, probes, timeout=4.0, headers=None):
    """Each model (or GET path) that did not answer, with why: {model: reason}."""
    failures = {}
    for probe in probes:
        reason = answer(base.rstrip("/"), probe, timeout, headers)
        if reason is not None:
            failures[probe.get("model", probe["path"])] = reason
    return failures


def key_headers(argv):
    """The access key's header from ``<header> <environment variable>`` after the probes, if given."""
    if len(argv) < 5:
        return {}
    return {argv[3]: os.environ.get(argv[4], "")}


def main(argv):
    failures = check(argv[1], json.loads(argv[2]), headers=key_headers(argv))
    for model, reason in failures.items():
        what = model if model.startswith("/") else f"model {model!r}"
        print(f"{what} does not answer: {reason}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
