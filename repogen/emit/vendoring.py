"""What of repogen each model version carries: the runtime modules its model can reach, cloudpickle where its payload
needs it.

A version directory is copied file by file wherever a repository travels (KServe's storage initializer, ``docker
cp``), and every model of a repository carries its own copy: the runtime that a numpy ``@batch`` model never runs
would be most of its directory. So a version carries

* the runtime modules its ``model.py`` imports and its payload names (``repogen.runtime.request_decorators.batch``,
  ``repogen.runtime.portable.make_function``, a BLS client's ``repogen.runtime.bls.ModelClient``);
* the :data:`OPTIONAL` modules its model uses: the runtime imports those only inside the functions that need them
  (a decoupled model's streams, a GPU instance's transfers), and the build knows from the model whether it does;
* every module these import when they load (their imports at module level, ``TYPE_CHECKING`` aside; a
  subpackage's module with the subpackage's ``__init__``, as ``contract.package_trees`` with ``contract``), and
  ``repogen/__init__.py``; the runtime package's own ``__init__.py`` without its lazy public names, which only a
  payload referring to the package itself reaches (``runtime_init.py.tmpl``);
* cloudpickle only where the payload names it (a class pickled by value) or imports anything beyond numpy (third-party
  code that imports cloudpickle when it is there, as joblib's loky does, finds it, as it always has: the packager
  counts it provided): functions, their modules and closures are rebuilt by the runtime's own ``portable`` helpers.

A payload that refers to ``repogen`` or ``repogen.runtime`` itself (``import repogen`` in the user's code) may reach
any of it through the runtime's lazy names, and carries the whole runtime; one that imports a runtime module by
name (``from repogen.runtime.stream_cancellation import stream_cancelled`` in a function) carries that module.
``tests/unit/emit/test_vendoring.py`` checks that every import inside a function of the runtime is listed here or is
carried by every model.
"""

from __future__ import annotations

import ast
import functools
import pickletools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..ir.spec import ModelSpec
from ..runtime.contract import BF16, NUMPY, Metadata, inputs_on_cpu
from ..runtime.instance import factory
from .templates import cloudpickle_files, render, runtime_files

RUNTIME = "repogen.runtime"

OPTIONAL = {
    "decoupled": "a decoupled model (its responses are streams)",
    "fused": "a fused ensemble (its steps run in-process)",
    "frameworks": "a model that can meet another framework's tensors: declared tensors=, a GPU instance, inputs left "
    "on the GPU (FORCE_CPU_ONLY_INPUT_TENSORS), BF16 tensors, or a payload importing anything beyond numpy",
    "devices": "as frameworks.py: the instance's GPU, inputs left on it, out-of-memory answers",
    "transfers": "as frameworks.py: a GPU instance's batch transfers",
    "gpu_batch": "as frameworks.py: a GPU instance's torch @batch batch, straight through",
    "packages": "a model that ships package trees",
    "readiness": "a model whose callable may answer is_ready (a class or object defining it, a factory, a fused step)",
    "streams": "a payload holding clients of decoupled models (bls.py, which its pickle names, imports it)",
    "concurrency": "a model whose callable may be async (the build found one: max_concurrency, or a factory)",
    "user_metrics": "a model whose payload declares metrics (model.json's metrics; Counter, Gauge, Histogram)",
    "tracing": "a model whose code can open spans of its own: its payload or shipped sources name traced_span, or it "
    "ships package trees (bls.py and concurrency.py, which carry BLS calls' traces, import it as they load)",
    "server_flags": "a model that depends on a tritonserver option: the response cache, the rate limiter, a GPU "
    "instance's CUDA pool (its first instance logs each one its server was started without)",
    "unrecoverable": "a model whose code can raise PyTritonUnrecoverableError: its payload or shipped sources name it, "
    "or it ships package trees (the instance stops serving, and the server stops)",
}
"""The runtime's optional modules, each with the models that carry it."""

_NAMED = {b"traced_span": "tracing", b"PyTritonUnrecoverableError": "unrecoverable"}
"""A name a model's code reaches a runtime module by (``request.traced_span``, ``repogen.traced_span``; ``raise
PyTritonUnrecoverableError``), and that module: in its payload (a pickled reference, pinned bytecode's names) or its
shipped sources, the model carries it; a model shipping package trees carries them all (their code is not read)."""
_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}
_PUTS = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


def vendored_files(
    model: ModelSpec,
    funcs: Sequence[Any],
    metadata: Mapping[str, Any],
    source: bytes,
    payload: bytes,
    imports: Iterable[str] = (),
    sources: Iterable[bytes] = (),
) -> dict[str, bytes]:
    """The vendored files of one version directory (paths relative to it): what ``model.py`` (``source``) imports,
    what the pickled ``payload`` names or its code ``imports``, and what ``model`` uses (``funcs``: the version's
    callables, ``metadata``: its ``model.json``, ``sources``: the code it ships), closed over their imports;
    cloudpickle where the payload names it or has requirements."""
    named = pickle_globals(payload)
    files = {path: data for path, data in runtime_files() if path.startswith("runtime/")}
    modules = {*(module for module, _ in named), *imports}
    if modules & {"repogen", RUNTIME}:
        carried = set(runtime_modules())
    else:
        roots = {"__init__", *model_imports(source), *optional_modules(model, funcs, metadata)}
        for name, module in _NAMED.items():
            if metadata.get(Metadata.PACKAGES) or any(name in code for code in (payload, *sources)):
                roots.add(module)
        roots |= {_runtime_name(module) for module in modules if module.startswith(f"{RUNTIME}.")}
        carried = reached(roots)
    found = {f"repogen/{path}": data for path, data in files.items() if _module_name(path) in carried}
    if carried != set(runtime_modules()):  # nothing reaches the lazy names: runtime/__init__.py's bulk
        found["repogen/runtime/__init__.py"] = render("runtime_init.py.tmpl")
    if any(module.split(".")[0] == "cloudpickle" for module in modules) or metadata.get(Metadata.REQUIREMENTS):
        found.update(cloudpickle_files())
    return found


def optional_modules(model: ModelSpec, funcs: Sequence[Any], metadata: Mapping[str, Any]) -> set[str]:
    """The :data:`OPTIONAL` modules ``model``'s version carries."""
    fused = bool(metadata.get(Metadata.FUSED))
    found = set()
    if model.decoupled:
        found.add("decoupled")
    if fused:
        found.add("fused")
    if _meets_frameworks(model, metadata, fused):
        found |= {"frameworks", "devices", "transfers", "gpu_batch"}
    if metadata.get(Metadata.PACKAGES):
        found.add("packages")
    if fused or any(_may_be_ready(func) for func in funcs):
        found.add("readiness")
    if metadata.get(Metadata.CONCURRENCY) or any(isinstance(func, factory) for func in funcs):
        found.add("concurrency")
    if metadata.get(Metadata.METRICS):
        found.add("user_metrics")
    if model.response_cache or model.on_gpu or any(group.rate_limiter for group in model.instance_groups):
        found.add("server_flags")  # what repogen.triton.server_options records a model needing
    return found


def _meets_frameworks(model: ModelSpec, metadata: Mapping[str, Any], fused: bool) -> bool:
    """Whether a tensor of another framework than numpy can reach the runtime, or a GPU instance moves any."""
    if fused or model.placement.tensors != NUMPY or model.on_gpu or metadata.get(Metadata.REQUIREMENTS):
        return True
    if not inputs_on_cpu(dict(model.parameters)):
        return True
    return any(t.data_type == BF16 for t in (*model.inputs, *model.outputs))


def _may_be_ready(func: Any) -> bool:
    """Whether the object the server makes of ``func`` may have ``is_ready`` (runtime/readiness.py asks it)."""
    return isinstance(func, factory) or callable(getattr(func, "is_ready", None))


def model_imports(source: bytes) -> set[str]:
    """The runtime modules a generated ``model.py`` imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(f"{RUNTIME}."):
            found.add(_runtime_name(str(node.module)))
    return found


def reached(roots: Iterable[str]) -> set[str]:
    """``roots`` and every runtime module they import when they load, transitively (a subpackage's module with its
    package's ``__init__``, which Python runs first)."""
    found: set[str] = set()
    pending = list(roots)
    while pending:
        module = pending.pop()
        if module not in found:
            found.add(module)
            pending.extend(loaded_with(module))
            if "." in module:
                pending.append(module.rpartition(".")[0])
    return found


@functools.cache
def loaded_with(module: str) -> frozenset[str]:
    """The runtime modules ``module`` imports when it loads: at module level, ``if TYPE_CHECKING:`` aside."""
    return frozenset(_relative_imports(_module_tree(module).body, lazy=False, package=_package(module)))


@functools.cache
def imported_lazily(module: str) -> frozenset[str]:
    """The runtime modules ``module`` imports inside its functions (the runtime's optional parts)."""
    found = set()
    for node in ast.walk(_module_tree(module)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found |= _relative_imports(node.body, lazy=True, package=_package(module))
    return frozenset(found)


def runtime_modules() -> list[str]:
    """Every module of the runtime package, by its dotted name under it: ``payload``, ``__init__`` (the runtime
    package's own), ``contract`` (a subpackage: its ``__init__``), ``contract.package_trees``."""
    return [_module_name(path) for path, _ in runtime_files() if path.startswith("runtime/")]


def _module_name(path: str) -> str:
    """``runtime/contract/__init__.py`` -> ``contract``; ``runtime/payload.py`` -> ``payload``."""
    parts = path.removeprefix("runtime/").removesuffix(".py").split("/")
    return ".".join(parts[:-1] if len(parts) > 1 and parts[-1] == "__init__" else parts)


def _runtime_name(module: str) -> str:
    """``repogen.runtime.contract.package_trees`` -> ``contract.package_trees``."""
    return module.removeprefix(f"{RUNTIME}.")


@functools.cache
def _paths() -> dict[str, str]:
    return {_module_name(path): path for path, _ in runtime_files() if path.startswith("runtime/")}


def _package(module: str) -> str:
    """The package ``module``'s relative imports start from: itself for a subpackage, else its parent ("" for the
    runtime's own modules)."""
    if _paths()[module].endswith("/__init__.py") and module != "__init__":
        return module
    return module.rpartition(".")[0]


def _module_tree(module: str) -> ast.Module:
    return ast.parse(dict(runtime_files())[_paths()[module]])


_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.ClassDef)  # run when the module loads
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)  # run when called


def _relative_imports(body: Sequence[ast.stmt], lazy: bool, package: str) -> set[str]:
    """The runtime modules ``body`` (of a module in ``package``) imports; ``lazy``: inside functions too, else only
    what runs as it loads."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level:
            found |= _imported(node, package)
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            continue
        if not isinstance(node, _BLOCKS) and not (lazy and isinstance(node, _FUNCTIONS)):
            continue
        blocks = [getattr(node, field, []) for field in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(node, "handlers", [])]
        found |= _relative_imports([child for block in blocks for child in block], lazy, package)
    return found


def _imported(node: ast.ImportFrom, package: str) -> set[str]:
    """The runtime modules a relative ``from ... import`` in ``package`` names: its module, or each name that is a
    module of that package (``from . import decoupled``, ``from .contract import package_trees``)."""
    base = package.split(".") if package else []
    if node.level - 1 > len(base):
        return set()  # above the runtime package
    prefix = ".".join([*base[: len(base) - (node.level - 1)], *([node.module] if node.module else [])])
    named = {f"{prefix}.{alias.name}".lstrip(".") for alias in node.names} & set(_paths())
    return named | ({prefix} if prefix else set())


def pickle_globals(data: bytes) -> set[tuple[str, str]]:
    """The (module, name) of every global a pickle refers to, read from its opcodes: nothing is unpickled."""
    found: set[tuple[str, str]] = set()
    recent: list[object] = []  # the last two values pushed: STACK_GLOBAL's module and name
    memo: dict[Any, object] = {}
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in _PUTS:
            memo[len(memo) if name == "MEMOIZE" else arg] = recent[-1] if recent else None
            continue
        value: object = None
        if name in _STRINGS:
            value = arg
        elif name in _GETS:
            value = memo.get(arg)
        elif name == "GLOBAL":
            module, _, qualname = str(arg).partition(" ")
            found.add((module, qualname))
        elif name == "STACK_GLOBAL" and len(recent) == 2:
            found.add((str(recent[0]), str(recent[1])))
        elif not op.stack_after:
            continue
        recent = [*recent[-1:], value]
    return found
