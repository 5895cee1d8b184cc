"""Precomputed plans that turn a callable's results into Triton output tensors.

Plans are built once per model instance from the model configuration so that the per-request
path does a dictionary lookup and, only when needed, a cast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .contract import BY_ENUM, NUMPY_DTYPES, STRING
from .errors import InferenceError
from .tensors import framework_of, made_ready

SHAPES_KEPT = 64  # shapes an OutputPlan remembers as checked


def to_bytes_array(value: np.ndarray) -> np.ndarray:
    """BYTES tensors travel as object arrays of ``bytes``; ``str`` is encoded as UTF-8."""
    if value.dtype == object:
        return value
    flat = value.ravel()
    if value.dtype.kind == "U":
        items = [s.encode("utf-8") for s in flat.tolist()]
    elif value.dtype.kind == "S":
        items = flat.tolist()
    else:
        items = [str(x).encode("utf-8") for x in flat.tolist()]
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(value.shape)


class OutputPlan:
    """How one declared output is checked and converted."""

    __slots__ = (
        "name", "dtype", "element", "dims", "is_bytes", "batched", "strict", "model", "ndim", "fixed", "data_type",
        "shapes_seen",
    )  # fmt: skip

    def __init__(self, model: str, name: str, data_type: str, dims: list[int], batched: bool, strict: bool):
        self.model = model
        self.name = name
        self.data_type = data_type
        self.dtype = NUMPY_DTYPES.get(data_type)  # None for BF16, which only a framework's tensor holds
        self.element = BY_ENUM[data_type].element
        self.dims = tuple(dims)
        self.is_bytes = data_type == STRING
        self.batched = batched
        self.strict = strict
        # Shape check precomputed: the rank, and only the dimensions that are not -1.
        self.ndim = len(self.dims) + (1 if batched else 0)
        offset = 1 if batched else 0
        self.fixed = tuple((i + offset, d) for i, d in enumerate(self.dims) if d != -1)
        self.shapes_seen: set[tuple[int, ...]] = set()  # passed check_shape

    def accepts(self, value: Any, rows: int | None = None) -> bool:
        """The fast lane's one rule, ``value`` going out as it is: an ndarray of the declared dtype, C-contiguous,
        with a batch axis of ``rows`` rows (when given), and, for a strict model, the declared rank and fixed
        dimensions. emit/model_source.py's inline check is exactly this (tests/unit/emit/test_fast_lane.py);
        fused.py asks it of each step's outputs."""
        if type(value) is not np.ndarray or value.dtype != self.dtype or not value.flags.c_contiguous:
            return False
        if self.strict:
            if value.ndim != self.ndim or any(value.shape[i] != d for i, d in self.fixed):
                return False
        elif value.ndim == 0:
            return False
        return rows is None or value.shape[0] == rows

    def convert(self, value: Any) -> Any:
        if type(value) is np.ndarray and value.dtype == self.dtype and value.flags.c_contiguous:
            # Fast path (numeric output of the declared dtype): only the strict shape check remains.
            if self.strict and value.shape not in self.shapes_seen:
                self.check_shape(value.shape)
            return value
        if made_ready(value):  # already made into the backend's tensor, after these checks (runtime/transfers.py)
            return value
        if type(value) is not np.ndarray and (framework := framework_of(value)) is not None:
            return framework.output(value, self)  # checked and made right on its own device
        if self.dtype is None:
            self._fail_bf16(value)
        try:
            arr = value if isinstance(value, np.ndarray) else np.asarray(value)
            if self.is_bytes:
                if arr.dtype != object:
                    if self.strict and arr.dtype.kind not in "SU":
                        self.fail(f"dtype bytes/object, found {arr.dtype}")
                    arr = to_bytes_array(arr)
            elif arr.dtype != self.dtype:
                if self.strict:
                    self.fail(f"dtype {self.dtype}, found {arr.dtype}")
                arr = arr.astype(self.dtype)
        except InferenceError:
            raise
        except Exception as exc:  # a value numpy cannot turn into the declared dtype ('abc' for FP32)
            raise self.unconvertible(value, exc) from None
        if self.strict:
            self.check_shape(arr.shape)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        return arr

    def _fail_bf16(self, value: Any) -> None:
        raise InferenceError(
            f"model '{self.model}' output '{self.name}' is declared BF16, which numpy cannot hold, but the callable "
            f"returned {describe(value)}; return a bfloat16 tensor of a framework (torch.bfloat16, through DLPack)"
        )

    def check_shape(self, shape: tuple[int, ...]) -> None:
        if shape in self.shapes_seen:
            return
        dims = shape[1:] if self.batched else shape
        ok = len(dims) == len(self.dims) and all(d == -1 or d == s for d, s in zip(self.dims, dims, strict=True))
        if self.batched and not shape:
            ok = False
        if not ok:
            expected = ("[batch, " if self.batched else "[") + ", ".join(map(str, self.dims)) + "]"
            self.fail(f"shape {expected}, found {list(shape)}")
        if len(self.shapes_seen) < SHAPES_KEPT:
            self.shapes_seen.add(tuple(shape))

    def unconvertible(self, value: Any, exc: BaseException) -> InferenceError:
        """The error for a returned value that cannot become this output: what was declared, what came back."""
        return InferenceError(
            f"model '{self.model}' output '{self.name}' is declared {self.data_type.removeprefix('TYPE_')} "
            f"({self.element if self.dtype is None else self.dtype}), but the callable returned {describe(value)}, "
            "which cannot be converted to it "
            f"({type(exc).__name__}: {exc}); return an array of that dtype"
        )

    def fail(self, what: str) -> None:
        raise InferenceError(f"model '{self.model}' output '{self.name}': expected {what} (strict=True)")


def output_pairs(
    model: str, plans: list[OutputPlan], declared: frozenset[str], strict: bool, result: Any
) -> list[tuple[OutputPlan, Any]]:
    """Each declared output's plan beside the value ``result`` holds for it (a dict, or a sequence in the declared
    order); what is missing, extra (strict) or of another form fails, naming it."""
    if isinstance(result, dict):
        if strict and not result.keys() <= declared:
            extra = sorted(set(result) - declared)
            raise InferenceError(
                f"model '{model}' returned undeclared outputs {extra}; declared: {sorted(declared)} (strict=True)"
            )
        pairs = []
        for plan in plans:
            if plan.name not in result:
                raise InferenceError(
                    f"model '{model}' did not return output '{plan.name}'; it returned {sorted(result)}"
                )
            pairs.append((plan, result[plan.name]))
        return pairs
    if isinstance(result, (list, tuple)):
        if len(result) != len(plans):
            raise InferenceError(
                f"model '{model}' returned {len(result)} outputs as a sequence; expected "
                f"{len(plans)} in the declared order {[p.name for p in plans]}"
            )
        return list(zip(plans, result, strict=True))
    raise InferenceError(
        f"model '{model}' returned {type(result).__name__} for a request; expected a dict of output name to array"
    )


def describe(value: Any) -> str:
    """A short account of a returned value for error messages: its type, dtype, shape and first items."""
    try:
        if isinstance(value, np.ndarray):
            head = np.array2string(value.ravel()[:3], threshold=3, max_line_width=80)
            more = "..." if value.size > 3 else ""
            return f"an array of dtype {value.dtype} and shape {list(value.shape)} ({head}{more})"
        text = repr(value)
    except Exception:  # a hostile __repr__: the type is still worth saying
        return type(value).__name__
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
