"""Run a generated Kubernetes container spec on a Docker engine as a kubelet would, probes included.

No cluster runs here; what a pod does with one container can be reproduced with ``docker run``:
``command``/``args`` (``command`` replaces the image's entrypoint, ``args`` its ``CMD``), ``env``, the
``securityContext`` (``runAsUser``/``runAsGroup`` as ``--user``, ``runAsNonRoot`` refused for uid 0 as
the kubelet refuses it, ``allowPrivilegeEscalation: false`` as ``no-new-privileges``, dropped and
added capabilities, ``readOnlyRootFilesystem`` as ``--read-only``), every volume mount (the memory
``emptyDir`` on ``/dev/shm`` as ``--shm-size`` of its ``sizeLimit``, any other ``emptyDir`` as a
``--tmpfs``), ``resources.limits`` (memory, CPU) and the container ports, published on 127.0.0.1.

``env`` takes literal values and Secrets' keys (``valueFrom.secretKeyRef``, from the ``secrets`` given: a
missing one keeps the container from starting, as it keeps a pod), and ``$(VAR)`` in ``command`` and
``args`` is expanded from it as the kubelet expands it (``$$`` is a literal ``$``).

Probes run as the kubelet runs them: ``httpGet`` from outside the container (here the host, through
the published port), ``exec`` inside it (``docker exec``, as the container's user); a probe passes on HTTP
200-399 or exit status 0. A probe is judged by its outcome, not by a clock: ``docker exec`` and a ``python3``
starting in the container take seconds on a loaded test host, which says nothing of the node the
``timeoutSeconds`` are sized for (those are checked as values). Only a probe that hangs past
:data:`PROBE_HANG_S` fails for time, and its detail says so. :meth:`Pod.wait_started`
runs the startup probe every ``periodSeconds`` until it passes (or ``failureThreshold`` runs fail),
:meth:`Pod.until_failed` a probe until ``failureThreshold`` consecutive failures, when the kubelet
would restart the container (liveness) or take it out of its Service (readiness).
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from repogen.server.running.docker import Container, Engine

__all__ = ["PROBE_HANG_S", "Pod", "ProbeResult"]

PROBE_HANG_S = 120.0
"""A hang guard for one probe run, never a measure: a probe that has not ended by then is reported as hung."""

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "": 1}


def _bytes(quantity: str) -> int:
    number = quantity.rstrip("KMGTik")
    return int(float(number) * _UNITS[quantity[len(number) :]])


def _cpus(quantity: str) -> str:
    return str(int(quantity[:-1]) / 1000) if quantity.endswith("m") else quantity


@dataclass(frozen=True)
class ProbeResult:
    passed: bool
    detail: str
    seconds: float


class Pod:
    """One container of a pod template (a Deployment's, or any ``spec`` with ``containers`` and ``volumes``)."""

    def __init__(
        self,
        pod_spec: Mapping[str, Any],
        container: str | None = None,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
    ):
        containers = pod_spec["containers"]
        found = next((c for c in containers if c["name"] == container), None) if container else containers[0]
        if found is None:
            raise LookupError(f"no container {container!r} in {[c['name'] for c in containers]}")
        self.spec: Mapping[str, Any] = found
        self.volumes = {volume["name"]: volume for volume in pod_spec.get("volumes", [])}
        self.secrets = {name: dict(keys) for name, keys in (secrets or {}).items()}
        self.container: Container | None = None

    @classmethod
    def from_manifest(
        cls,
        text: str,
        kind: str = "Deployment",
        container: str | None = None,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Pod:
        """The pod template of the first ``kind`` document in a manifest (``repogen deploy --k8s``'s output)."""
        for document in yaml.safe_load_all(text):
            if document and document.get("kind") == kind:
                return cls(document["spec"]["template"]["spec"], container, secrets)
        raise LookupError(f"no {kind} in the manifest")

    def environment(self) -> dict[str, str]:
        """The container's ``env``, Secrets' keys resolved."""
        found = {}
        for variable in self.spec.get("env", []):
            source = variable.get("valueFrom", {}).get("secretKeyRef")
            if source is None:
                found[variable["name"]] = str(variable.get("value", ""))
                continue
            value = self.secrets.get(source["name"], {}).get(source["key"])
            if value is None:
                raise LookupError(
                    f"env {variable['name']}: Secret {source['name']!r} key {source['key']!r} was not given "
                    "(Pod(..., secrets={name: {key: value}})); the kubelet would not start the container"
                )
            found[variable["name"]] = value
        return found

    def _expanded(self, text: str) -> str:
        environment = self.environment()
        return _REFERENCE.sub(lambda m: "$" if m[0] == "$$" else environment.get(m[1], m[0]), text)

    def docker_flags(self) -> list[str]:
        """``docker run`` flags doing what the kubelet does with this container (everything but the image)."""
        spec, flags = self.spec, []
        security = spec.get("securityContext", {})
        user, group = security.get("runAsUser"), security.get("runAsGroup")
        if security.get("runAsNonRoot") and not user:
            raise ValueError("runAsNonRoot without a non-zero runAsUser: the kubelet would not start it")
        if user is not None:  # without runAsGroup, the image's group of that uid (as containerd and Docker pick it)
            flags += ["--user", str(user) if group is None else f"{user}:{group}"]
        if security.get("allowPrivilegeEscalation") is False:
            flags += ["--security-opt", "no-new-privileges"]
        if security.get("privileged"):
            flags.append("--privileged")
        capabilities = security.get("capabilities", {})
        flags += [f"--cap-drop={cap}" for cap in capabilities.get("drop", [])]
        flags += [f"--cap-add={cap}" for cap in capabilities.get("add", [])]
        if security.get("readOnlyRootFilesystem"):
            flags.append("--read-only")
        for name, value in self.environment().items():
            flags += ["-e", f"{name}={value}"]
        for mount in spec.get("volumeMounts", []):
            flags += self._volume_flags(mount)
        limits = spec.get("resources", {}).get("limits", {})
        if "memory" in limits:
            flags.append(f"--memory={_bytes(str(limits['memory']))}")
        if "cpu" in limits:
            flags.append(f"--cpus={_cpus(str(limits['cpu']))}")
        if "command" in spec:
            flags += ["--entrypoint", self._expanded(spec["command"][0])]
        return flags

    def _volume_flags(self, mount: Mapping[str, Any]) -> list[str]:
        volume = self.volumes[mount["name"]]
        empty = volume.get("emptyDir")
        if empty is None:
            raise ValueError(f"volume {mount['name']}: only emptyDir volumes can be reproduced here, found {volume}")
        size = empty.get("sizeLimit")
        if mount["mountPath"] == "/dev/shm" and empty.get("medium") == "Memory":
            return [f"--shm-size={_bytes(size)}"] if size else []
        options = "rw" + (f",size={_bytes(size)}" if size else "")
        return ["--tmpfs", f"{mount['mountPath']}:{options}"]

    def arguments(self) -> list[str]:
        """What follows the image on ``docker run``: the rest of ``command``, then ``args``."""
        return [self._expanded(part) for part in [*self.spec.get("command", [])[1:], *self.spec.get("args", [])]]

    def run(self, engine: Engine, name: str, image: str | None = None, extra: Sequence[str] = ()) -> Container:
        """Start the container (``image`` in place of the spec's, e.g. a locally built tag; ``extra`` flags, e.g.
        the bind mount a volume this module cannot make stands for)."""
        publish = {port.get("name", str(port["containerPort"])): port["containerPort"] for port in self.spec["ports"]}
        flags = [*self.docker_flags(), *extra]
        self.container = engine.run(
            image or self.spec["image"], self.arguments(), name=name, flags=flags, publish=publish
        )
        return self.container

    # ------------------------------------------------------------------ probes

    def probe(self, which: str) -> ProbeResult:
        """Run the ``which`` probe (``startupProbe``, ``readinessProbe``, ``livenessProbe``) once."""
        assert self.container is not None, "run() the pod first"
        probe = self.spec[which]
        start = time.monotonic()
        if "httpGet" in probe:
            passed, detail = self._http(probe["httpGet"], PROBE_HANG_S)
        elif "exec" in probe:
            try:
                done = self.container.exec(*probe["exec"]["command"], timeout=PROBE_HANG_S)
                passed, detail = done.returncode == 0, (done.stdout + done.stderr).strip()
            except subprocess.TimeoutExpired:
                passed, detail = False, f"hung: no outcome in {PROBE_HANG_S:.0f} s"
        else:
            raise ValueError(f"{which}: only httpGet and exec probes are run here, found {probe}")
        return ProbeResult(passed, detail, time.monotonic() - start)

    def _http(self, get: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
        assert self.container is not None
        port = get["port"]
        name = next((p.get("name", str(p["containerPort"])) for p in self.spec["ports"]
                     if port in (p["containerPort"], p.get("name"))), None)  # fmt: skip
        if name is None:
            raise ValueError(f"probe port {port} is not a port of the container")
        url = f"http://{self.container.url(name)}{get.get('path', '/')}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return 200 <= response.status < 400, f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            return False, f"HTTP {exc.code}"
        except OSError as exc:
            return False, str(exc)

    def wait_started(self) -> float:
        """Seconds until the startup probe passes, run every ``periodSeconds`` up to ``failureThreshold`` times."""
        probe = self.spec["startupProbe"]
        start = time.monotonic()
        for _ in range(int(probe.get("failureThreshold", 3))):
            if self.probe("startupProbe").passed:
                return time.monotonic() - start
            assert self.container is not None
            if not self.container.running():
                raise AssertionError(f"the container exited before its startup probe passed:\n{self.container.logs()}")
            time.sleep(float(probe.get("periodSeconds", 10)))
        raise AssertionError(f"the startup probe never passed; the kubelet would kill the container:\n{self.logs()}")

    def until_failed(self, which: str, timeout: float) -> tuple[float, list[ProbeResult]]:
        """Run ``which`` every ``periodSeconds`` until ``failureThreshold`` consecutive failures: (seconds, runs)."""
        probe = self.spec[which]
        threshold, period = int(probe.get("failureThreshold", 3)), float(probe.get("periodSeconds", 10))
        start, runs = time.monotonic(), []
        while time.monotonic() - start < timeout:
            runs.append(self.probe(which))
            if len(runs) >= threshold and not any(run.passed for run in runs[-threshold:]):
                return time.monotonic() - start, runs
            time.sleep(max(0.0, period - runs[-1].seconds))
        raise AssertionError(f"{which} still passing after {timeout:.0f} s: {runs[-3:]}")

    def logs(self) -> str:
        return self.container.logs_tail() if self.container else ""
