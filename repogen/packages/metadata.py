"""What each shipped wheel's own metadata says: its license, and which shipped distributions it requires.

Both go into the lock that ``model.json`` records, so the SBOM (``repogen.sbom``) is written from what the
build recorded, not by opening the trees again. The license is taken as the wheel states it (PEP 639's
``License-Expression``, else a one-line ``License`` field, else its ``License ::`` classifiers); nothing
is inferred. The requirements are ``Requires-Dist`` evaluated as pip evaluated them for the container: its
Python and machine, and the extras that dependents ask for; only edges between distributions of the same
lock are kept (numpy, which the container provides, is not in any lock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from .options import canonical
from .resolve import Pin
from .wheel_targets import WheelTarget

_LONG = 120  # characters: a License field longer than this (or on several lines) is a license's text, not its name


def read_metadata(root: Path, index: Mapping[str, object]) -> tuple[dict[str, Any], list[str]]:
    """The license record and the raw ``Requires-Dist`` lines of the unpacked wheel at ``root``."""
    found = sorted(p for p in index if p.count("/") == 1 and p.endswith(".dist-info/METADATA"))
    if not found:
        return {}, []
    message = HeaderParser().parsestr((root / found[0]).read_text(encoding="utf-8", errors="replace"))
    return license_record(message), list(message.get_all("Requires-Dist") or [])


def license_record(message: Any) -> dict[str, Any]:
    """``{"expression": ...}``, ``{"name": ...}`` or ``{"classifiers": [...]}``: the license as stated."""
    expression = (message.get("License-Expression") or "").strip()
    if expression:
        return {"expression": expression}
    text = (message.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= _LONG and text.upper() not in ("UNKNOWN", "NONE"):
        return {"name": text}
    classifiers = [c.split("::")[-1].strip() for c in message.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        return {"classifiers": classifiers}
    if text and text.upper() not in ("UNKNOWN", "NONE"):  # only a license's text: its first line names it
        return {"name": text.splitlines()[0].strip()[:_LONG]}
    return {}


def _environment(target: WheelTarget) -> dict[str, str]:
    """PEP 508 marker variables of the container (CPython ``target.python`` on linux ``target.machine``)."""
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{target.python}.0",
        "os_name": "posix",
        "platform_machine": target.machine,
        "platform_python_implementation": "CPython",
        "platform_system": "Linux",
        "python_full_version": f"{target.python}.0",
        "python_version": target.python,
        "sys_platform": "linux",
    }


def requirement_graph(
    pins: Sequence[Pin], requires: Mapping[str, list[str]], target: WheelTarget, wanted: Sequence[str]
) -> dict[str, list[str]]:
    """Canonical name -> the canonical names of the lock's distributions it requires on ``target``.

    ``requires`` maps each pin's sha256 to its ``Requires-Dist`` lines; ``wanted`` are the requirements the
    payloads asked for (``name==version``). Extras propagate until nothing changes, as pip's resolver does.
    """
    names = {canonical(pin.name): pin for pin in pins}
    extras: dict[str, set[str]] = {name: set() for name in names}
    for requirement in wanted:
        try:
            parsed = Requirement(requirement)
        except InvalidRequirement:
            continue
        extras.setdefault(canonical(parsed.name), set()).update(parsed.extras)
    environment = _environment(target)
    graph: dict[str, set[str]] = {name: set() for name in names}
    changed = True
    while changed:
        changed = False
        for name, pin in names.items():
            for line in requires.get(pin.sha256, []):
                try:
                    parsed = Requirement(line)
                except InvalidRequirement:
                    continue
                other = canonical(parsed.name)
                if other not in names:
                    continue
                for extra in ["", *sorted(extras[name])]:
                    if parsed.marker is None or parsed.marker.evaluate({**environment, "extra": extra}):
                        if other not in graph[name]:
                            graph[name].add(other)
                            changed = True
                        if not parsed.extras <= extras[other]:
                            extras[other] |= parsed.extras
                            changed = True
                        break
    return {name: sorted(edges) for name, edges in sorted(graph.items())}
