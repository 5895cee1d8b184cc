"""``sbom.cdx.json``: a CycloneDX 1.6 SBOM of what a repository ships, written by every build.

Read from what the build recorded, never from a list of its own: every ``<model>/<version>/model.json``
(payload digest, BLS calls, fused steps, and per container Python the lock of the package tree shipped:
wheel, sha256, license as the wheel states it, the lock's distributions each requires), each model's
``config.pbtxt`` (backend, ensemble steps) and every file's sha256 (the payload of an exported network
or an included directory). Components: each model version (``machine-learning-model``, its payload's
sha256), each shipped wheel per container Python (``pkg:pypi`` purl naming the wheel file, its sha256,
its license), the vendored cloudpickle and repogen runtime. Dependencies: a model on what it ships and
calls, an ensemble on its steps, a distribution on what it requires in that Python's lock.

Deterministic: no timestamp, and the serial number is a UUID made from the document's own sha256. Written
with OWASP's ``cyclonedx-python-lib`` (the format's model and serializer), loaded only when a build runs.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from google.protobuf import text_format

from .runtime.contract import CONFIG_FILE, METADATA_FILE, Metadata, is_version_name
from .triton.proto import model_config_pb2 as mc
from .version import __version__

PROPERTY = "repogen:"  # the namespace of the properties this SBOM adds
_ZERO = uuid.UUID(int=0)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _python_of(tree: str) -> str:
    """``cp310-x86_64`` -> ``3.10``: the container Python a package tree was built for."""
    abi = tree.split("-", 1)[0].removeprefix("cp")
    return f"{abi[0]}.{abi[1:]}" if abi.isdigit() and len(abi) > 1 else tree


@functools.cache
def _stated_license(distribution: str) -> dict[str, Any]:
    """The license an installed distribution's metadata states (cloudpickle's, vendored into every model)."""
    try:
        message = importlib.metadata.metadata(distribution)
    except importlib.metadata.PackageNotFoundError:
        return {}
    from .packages.metadata import license_record

    return license_record(message)


def _records(files: Mapping[str, bytes]) -> dict[str, dict[str, Any]]:
    """``<model>/<version>`` -> its parsed model.json."""
    found = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) == 3 and parts[2] == METADATA_FILE and is_version_name(parts[1]):
            found[f"{parts[0]}/{parts[1]}"] = json.loads(data)
    return found


def _config(files: Mapping[str, bytes], model: str) -> mc.ModelConfig:
    message = mc.ModelConfig()
    data = files.get(f"{model}/{CONFIG_FILE}")
    if data is not None:
        text_format.Parse(data.decode("utf-8"), message, allow_unknown_field=True)
    return message


def _payload(version_dir: str, record: dict[str, Any] | None, digests: Mapping[str, str]) -> tuple[str, str] | None:
    """(path, sha256) of a version's payload: model.json's, else the ``model.*`` file an exporter or a user put."""
    if record is not None:
        payload = record.get(Metadata.PAYLOAD) or {}
        if payload.get("file") and payload.get("sha256"):
            return f"{version_dir}/{payload['file']}", str(payload["sha256"])
    for path in sorted(digests):
        head, _, name = path.rpartition("/")
        if head == version_dir and name.startswith("model.") and name != METADATA_FILE:
            return path, digests[path]
    return None


def _license(stated: dict[str, Any]) -> list[Any]:
    from cyclonedx.model.license import DisjunctiveLicense, LicenseAcknowledgement, LicenseExpression

    declared = LicenseAcknowledgement.DECLARED
    if stated.get("expression"):
        return [LicenseExpression(stated["expression"], acknowledgement=declared)]
    names = [stated["name"]] if stated.get("name") else list(stated.get("classifiers") or [])
    return [DisjunctiveLicense(name=name, acknowledgement=declared) for name in names]


def document(files: Mapping[str, bytes], digests: Mapping[str, str]) -> bytes:
    """The SBOM of a repository: ``files`` holds at least every model.json and config.pbtxt, ``digests``
    every file's sha256 (relative path -> hex)."""
    from cyclonedx.model.bom import Bom
    from cyclonedx.output.json import JsonV1Dot6

    graph = _Graph()
    runtime = graph.add("repogen-runtime", _runtime_component)
    records = _records(files)
    models = sorted({p.split("/", 1)[0] for p in digests if "/" in p})
    versions = {m: sorted({int(p.split("/")[1]) for p in digests if p.count("/") >= 2 and p.split("/")[0] == m
                           and is_version_name(p.split("/")[1])}) for m in models}  # fmt: skip
    refs = {m: [f"model:{m}/{v}" for v in versions[m]] for m in models}
    for model in models:
        config = _config(files, model)
        for number, ref in zip(versions[model], refs[model], strict=True):
            version_dir = f"{model}/{number}"
            record = records.get(version_dir)
            graph.add(
                ref, functools.partial(_model_component, model, number, config, _payload(version_dir, record, digests))
            )
            for step in config.ensemble_scheduling.step:
                graph.edges[ref].update(refs.get(step.model_name, []))
            if record is not None:
                graph.edges[ref].add(runtime)
                _add_record(graph, ref, record, refs, f"{version_dir}/cloudpickle/__init__.py" in digests)
    return _serialize(graph.components, graph.edges, Bom, JsonV1Dot6)


class _Graph:
    """The SBOM's components by reference, and the references each depends on."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {}
        self.edges: dict[str, set[str]] = {}

    def add(self, ref: str, make: Callable[[], Any]) -> str:
        """``ref``, made by ``make`` the first time it is added."""
        if ref not in self.components:
            self.components[ref] = make()
            self.edges[ref] = set()
        return ref


def _properties(**values: str | Iterable[str]) -> list[Any]:
    from cyclonedx.model import Property

    found = []
    for key, value in values.items():
        for item in [value] if isinstance(value, str) else value:
            found.append(Property(name=PROPERTY + key.replace("_", "-"), value=item))
    return found


def _runtime_component() -> Any:
    from cyclonedx.model.component import Component

    return Component(
        name="repogen-runtime",
        version=__version__,
        description="repogen's runtime, vendored into every model version it builds (<version>/repogen/: the modules "
        "that model reaches)",
        licenses=_license({"expression": "Apache-2.0"}),
        properties=_properties(vendored="repogen/"),
    )


def _model_component(model: str, number: int, config: mc.ModelConfig, payload: tuple[str, str] | None) -> Any:
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType

    kind = config.platform or config.backend or "python"
    return Component(
        type=ComponentType.MACHINE_LEARNING_MODEL,
        name=model,
        version=str(number),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=payload[1])] if payload else None,
        properties=_properties(backend=kind, **({"payload": payload[0]} if payload else {})),
    )


def _add_record(
    graph: _Graph, ref: str, record: dict[str, Any], refs: Mapping[str, list[str]], vendors_cloudpickle: bool
) -> None:
    """What a model version's ``model.json`` says it depends on: cloudpickle where it carries it, the models it calls
    or runs, and the distributions it imports, in each package tree it ships."""
    cloudpickle = (record.get(Metadata.BUILD) or {}).get("cloudpickle")
    if cloudpickle and vendors_cloudpickle:
        graph.edges[ref].add(_vendored_cloudpickle(graph, cloudpickle))
    for called in [*(record.get(Metadata.CALLS) or []), *(record.get(Metadata.FUSED) or [])]:
        graph.edges[ref].update(refs.get(str(called), []))
    wanted = {_canonical(r.split("==")[0]) for r in (record.get(Metadata.REQUIREMENTS) or {}).values()}
    for tree, entry in sorted((record.get(Metadata.PACKAGES) or {}).items()):
        shipped = {}
        for pin in entry.get("lock") or []:
            ref_of_pin = f"{tree}/{_canonical(pin['name'])}=={pin['version']}"
            shipped[_canonical(pin["name"])] = graph.add(ref_of_pin, functools.partial(_wheel_component, pin, tree))
        for pin in entry.get("lock") or []:
            graph.edges[shipped[_canonical(pin["name"])]].update(
                shipped[name] for name in pin.get("requires") or [] if name in shipped
            )
        graph.edges[ref].update(shipped[name] for name in sorted(wanted) if name in shipped)


def _wheel_component(pin: dict[str, Any], tree: str) -> Any:
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component
    from packageurl import PackageURL

    return Component(
        name=pin["name"],
        version=pin["version"],
        purl=PackageURL("pypi", None, _canonical(pin["name"]), pin["version"], {"file_name": pin["wheel"]}),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=pin["sha256"])],
        licenses=_license(pin.get("license") or {}),
        properties=_properties(python=_python_of(tree), package_tree=tree),
    )


def _vendored_cloudpickle(graph: _Graph, version: str) -> str:
    from cyclonedx.model.component import Component
    from packageurl import PackageURL

    return graph.add(
        f"cloudpickle=={version}",
        lambda: Component(
            name="cloudpickle",
            version=version,
            purl=PackageURL("pypi", None, "cloudpickle", version),
            description="vendored into the model versions whose payload needs it (<version>/cloudpickle/)",
            licenses=_license(_stated_license("cloudpickle")),
            properties=_properties(vendored="cloudpickle/"),
        ),
    )


def _serialize(components: dict[str, Any], edges: dict[str, set[str]], bom_class: Any, writer: Any) -> bytes:
    from cyclonedx.model.component import Component, ComponentType

    bom = bom_class(serial_number=_ZERO)
    bom.metadata.timestamp = None
    bom.metadata.tools.components.add(
        Component(type=ComponentType.APPLICATION, name="triton-repogen", version=__version__)
    )
    for ref in sorted(components):
        component = components[ref]
        component.bom_ref.value = ref
        bom.components.add(component)
    for ref in sorted(edges):
        bom.register_dependency(components[ref], [components[other] for other in sorted(edges[ref])])
    text = writer(bom).output_as_string(indent=2)
    serial = uuid.UUID(bytes=hashlib.sha256(text.encode("utf-8")).digest()[:16], version=5)
    final = json.loads(text)
    final["serialNumber"] = serial.urn
    return (json.dumps(final, indent=2, sort_keys=True) + "\n").encode("utf-8")
