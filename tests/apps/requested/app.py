"""Outputs a client did not ask for (tests/integration/test_requested_outputs_served.py).

``Three`` returns all three of its outputs whatever was asked, with ``square`` as an object numpy must convert
(``__array__``), and counts those conversions: an output nobody asked for must never be converted. ``x = -1`` reports
(``double``: conversions so far; ``asked``: what the last request said its client asked for). ``Skipper`` computes
only what was asked, as the docs show; ``Streamer`` streams ``Three``'s outputs.
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor

models = Repository()

OUTPUTS = [
    Tensor(name="double", dtype=np.float32, shape=(1,)),
    Tensor(name="square", dtype=np.float32, shape=(1,)),
    Tensor(name="asked", dtype=bytes, shape=(-1,)),
]
ONE = ModelConfig(batching=False)


class Converted:
    """A value numpy converts through ``__array__``, counting each time it does."""

    count = 0

    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        Converted.count += 1
        return np.asarray(self.value, dtype=dtype)


class Three:
    def __init__(self):
        self.asked = []

    def results(self, request):
        if request["x"][0] == -1:
            return {
                "double": np.array([Converted.count], np.float32),
                "square": np.zeros(1, np.float32),
                "asked": np.array([name.encode() for name in self.asked], dtype=object),
            }
        self.asked = request.requested_output_names
        x = request["x"]
        return {"double": x * 2, "square": Converted(x**2), "asked": np.array([b"-"], dtype=object)}

    def __call__(self, requests):
        return [self.results(request) for request in requests]


models.bind("Three", Three, inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))], outputs=OUTPUTS, config=ONE)


@models.model("Skipper", inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))], outputs=OUTPUTS, config=ONE,
              strict=True)  # fmt: skip
def skipper(requests):
    """Only the outputs its client asked for: a missing one is no error when nobody asked for it."""
    results = []
    for request in requests:
        asked = request.requested_output_names
        result = {}
        if "double" in asked:
            result["double"] = request["x"] * 2
        if "square" in asked:
            result["square"] = request["x"] ** 2
        if "asked" in asked:
            result["asked"] = np.array([name.encode() for name in asked], dtype=object)
        results.append(result)
    return results


class Streamer(Three):
    def __call__(self, requests):
        for _ in range(2):
            yield [self.results(request) for request in requests]


models.bind("Streamer", Streamer, inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))], outputs=OUTPUTS, config=ONE)
