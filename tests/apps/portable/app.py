"""Code shapes whose bytecode differs between Pythons: each must be rebuilt from source in the server.

Lambdas (several on one line, nested), closures over comprehension variables (comprehensions are
inlined from Python 3.12), nonlocal state, nested functions, decorators, classes with ``super()``,
properties, static and class methods, a dataclass, a NamedTuple and an Enum (their generated
methods have no source file), generators, async functions and async generators, and a
notebook-style cell whose source lives only in ``linecache``.
"""

import asyncio
import dataclasses
import enum
import functools
import linecache
import typing

import numpy as np
from shapes import Corner, area

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()
X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
UNBATCHED = ModelConfig(batching=False)

STEPS = [lambda x: x + 1, lambda x: x * 2]
NEGATE = lambda x: -x  # noqa: E702, E731
SUBTRACT = lambda a: lambda b: a - b  # noqa: E731

models.bind(
    "Lambdas",
    infer_func=lambda requests: [{"y": SUBTRACT(100)(NEGATE(STEPS[1](STEPS[0](r["x"]))))} for r in requests],
    inputs=X,
    outputs=Y,
    config=UNBATCHED,
)


def make_scaler(factor):
    offsets = [lambda v, k=k: v + k for k in range(3)]
    captured = [lambda: i * factor for i in range(3)]  # noqa: B023 - late binding: every lambda sees i == 2
    calls = 0

    def scaler(requests):
        nonlocal calls
        calls += 1

        def one(x):
            return offsets[2](x * factor) + sum(f() for f in captured)

        return [{"y": one(r["x"]), "calls": np.array([calls], dtype=np.int64)} for r in requests]

    return scaler


models.bind(
    "Closures",
    infer_func=make_scaler(10),
    inputs=X,
    outputs=[*Y, Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=UNBATCHED,
)


class Mode(enum.Enum):
    DOUBLE = 2
    TRIPLE = 3


@dataclasses.dataclass(frozen=True)
class Settings:
    mode: Mode = Mode.TRIPLE
    bias: float = 0.5
    tags: list = dataclasses.field(default_factory=list)


class Point(typing.NamedTuple):
    x: float
    y: float

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5


DEFAULTS = Settings(tags=["built"])


class Base:
    def __init__(self):
        self.settings = dataclasses.replace(DEFAULTS, tags=[*DEFAULTS.tags, "served"])

    def transform(self, x):
        return x * self.settings.mode.value

    @staticmethod
    def shift(x):
        return x + 1


class Scaled(Base):
    def __init__(self):
        super().__init__()
        self.origin = Point(3.0, 4.0)

    def transform(self, x):
        return super().transform(x) + self.settings.bias

    @property
    def scale(self):
        return self.origin.norm()

    @classmethod
    def tag_count(cls, settings):
        return len(settings.tags)

    @batch
    def __call__(self, x):
        y = self.shift(self.transform(x)) * self.scale
        return {"y": y.astype(np.float32), "tags": np.full((len(x), 1), self.tag_count(self.settings), np.int64)}


models.bind(
    "Classes",
    infer_func=Scaled,
    inputs=X,
    outputs=[*Y, Tensor(name="tags", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)


def traced(func):
    @functools.wraps(func)
    def wrapper(requests):
        return [{**result, "corner": np.array([area(Corner(2.0, 3.0))], np.float32)} for result in func(requests)]

    return wrapper


@models.model(
    "Decorated",
    inputs=X,
    outputs=[*Y, Tensor(name="corner", dtype=np.float32, shape=(1,))],
    config=UNBATCHED,
)
@traced
def decorated(requests):
    return [{"y": r["x"] if (n := len(r["x"])) < 2 else r["x"][:n]} for r in requests]


@models.model("Stream", inputs=X, outputs=Y, config=UNBATCHED)
def stream(requests):
    for step in range(3):
        yield [{"y": r["x"] + step} for r in requests]


@models.model("Async", inputs=X, outputs=Y, config=UNBATCHED)
async def twice(requests):
    await asyncio.sleep(0)
    return [{"y": r["x"] * 2} for r in requests]


@models.model("AsyncStream", inputs=X, outputs=Y, config=UNBATCHED)
async def async_stream(requests):
    for step in range(2):
        await asyncio.sleep(0)
        yield [{"y": r["x"] - step} for r in requests]


# What Jupyter does with a cell: compile it under a made-up file name, keep its text in linecache
# (that is where tracebacks and repogen find it), run it in __main__'s namespace.
CELL = """
import numpy as np

OFFSET = 7

def cell_infer(requests):
    match len(requests):
        case 0:
            return []
        case _:
            return [{"y": r["x"] * 2 + OFFSET} for r in requests]
"""
CELL_FILE = "<ipython-input-7-3c2f8a>"
linecache.cache[CELL_FILE] = (len(CELL), None, CELL.splitlines(keepends=True), CELL_FILE)
_cell_namespace = {"__name__": "__main__"}
exec(compile(CELL, CELL_FILE, "exec"), _cell_namespace)  # noqa: S102
models.bind("Notebook", infer_func=_cell_namespace["cell_infer"], inputs=X, outputs=Y, config=UNBATCHED)
