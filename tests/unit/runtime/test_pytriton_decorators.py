"""PyTriton's decorators, checked against the inputs and results PyTriton documents and tests."""

from __future__ import annotations

import asyncio
import json
import pickle

import numpy as np
import pytest

from repogen import (
    ConstantPadder,
    InferenceError,
    Request,
    TritonContext,
    batch,
    bind_context,
    fill_optionals,
    first_value,
    group_by_keys,
    group_by_values,
    pad_batch,
    sample,
    triton_context,
)
from repogen.runtime.context import TensorSpec, TritonModelConfig, find_context, reset_context


@pytest.fixture(autouse=True)
def _no_process_context():
    reset_context()
    yield
    reset_context()


def _context(max_batch_size=8, preferred=None, inputs=(), outputs=(), name="m"):
    """A context as the runtime builds it from Triton's model_config JSON."""
    config = {
        "name": name,
        "max_batch_size": max_batch_size,
        "input": [{"name": n, "data_type": t, "dims": [str(d) for d in dims]} for n, t, dims in inputs],
        "output": [{"name": n, "data_type": t, "dims": list(dims)} for n, t, dims in outputs],
    }
    if preferred is not None:
        config["dynamic_batching"] = {"preferred_batch_size": preferred}
    args = {
        "model_config": json.dumps(config),
        "model_name": name,
        "model_version": "3",
        "model_instance_name": f"{name}_0_1",
        "model_instance_kind": "GPU",
        "model_instance_device_id": "2",
        "model_repository": "/models/m",
    }
    return TritonContext.from_args(args)


def _equal(result, expected):
    assert result.keys() == expected.keys()
    for name, value in expected.items():
        assert type(result[name]) is type(value) or isinstance(value, np.ndarray), name
        np.testing.assert_array_equal(result[name], value)


# -- context ----------------------------------------------------------------------------------------


def test_context_is_parsed_from_initialize_args():
    context = _context(4, [2, 4], inputs=[("x", "TYPE_FP32", (-1, 3)), ("s", "TYPE_STRING", (1,))])
    config = context.model_config
    assert (context.model_name, context.model_version, context.instance_index) == ("m", 3, 1)
    assert (context.instance_kind, context.device_id, context.model_repository) == ("GPU", 2, "/models/m")
    assert config.batching and config.max_batch_size == 4 and config.batcher.preferred_batch_size == (2, 4)
    assert config.inputs[0] == TensorSpec("x", (-1, 3), np.dtype(np.float32))
    assert config.inputs[1].dtype == np.dtype(object)
    assert context.model_configs[object()] is config  # PyTriton's model_configs[infer_func]


def test_bind_context_reaches_instance_layers_and_process():
    context = _context()

    class Model:
        @batch
        @triton_context
        def infer(self, x, triton_context):
            return {"y": x + triton_context.model_config.max_batch_size}

    model = Model()
    assert bind_context(model.infer, context) is not None
    assert find_context(model) is context and find_context() is context
    (result,) = model.infer([Request({"x": np.zeros((1, 1))})])
    assert result["y"][0, 0] == 8


# -- @sample ---------------------------------------------------------------------------------------


def test_sample_passes_request_as_keywords():
    @sample
    def infer(**inputs):
        return {"a": inputs["a"] * 2, "b": inputs["b"] * 3}

    request = Request({"b": np.array([[7, 5], [8, 6]]), "a": np.array([[1], [1]])})
    (result,) = infer([request])
    _equal(result, {"a": np.array([[2], [2]]), "b": np.array([[21, 15], [24, 18]])})


def test_sample_handles_every_request_and_sequence_outputs():
    @sample
    def infer(a):
        return [a + 1]

    results = infer([Request({"a": np.array([1])}), Request({"a": np.array([5])})])
    assert [r[0].tolist() for r in results] == [[2], [6]]
    with pytest.raises(InferenceError, match="@sample function must return a dict"):
        sample(lambda a: 3)([Request({"a": np.array([1])})])


# -- @batch ------------------------------------------------------------------------------------------


def test_batch_documented_identity():
    @batch
    def identity(in1, in2):
        return {"out1": in1, "out2": in2}

    requests = [
        Request({"in1": np.array([[1, 1]]), "in2": np.array([[2, 2]])}),
        Request({"in1": np.array([[1, 2]]), "in2": np.array([[2, 3]])}),
    ]
    results = identity(requests)
    _equal(results[0], {"out1": np.array([[1, 1]]), "out2": np.array([[2, 2]])})
    _equal(results[1], {"out1": np.array([[1, 2]]), "out2": np.array([[2, 3]])})


def test_batch_rejects_outputs_with_a_row_more_or_less():
    with pytest.raises(InferenceError, match=r"output 'y' has 1 rows, expected 3 \(one per input row"):
        batch(lambda x: {"y": x[:1]})([Request({"x": np.zeros((1, 1))}), Request({"x": np.zeros((2, 1))})])
    with pytest.raises(InferenceError, match=r"output 'y' has 4 rows, expected 3 .*sizes \[3\]"):
        batch(lambda x: {"y": np.arange(4)})([Request({"x": np.zeros((3, 1))})])
    with pytest.raises(InferenceError, match=r"output 1 has no batch axis, expected 2"):
        batch(lambda x: (x, 7))([Request({"x": np.zeros((2, 1))})])


def test_batch_streams_generators_and_awaits_coroutines():
    @batch
    def stream(x):
        yield {"y": x}
        yield {"y": x + 1}

    @batch
    async def later(x):
        return {"y": x * 2}

    @batch
    async def astream(x):
        yield {"y": x * 3}

    async def collect(steps):
        return [[r["y"].item() for r in step] async for step in steps]

    requests = [Request({"x": np.array([[1]])}), Request({"x": np.array([[2]])})]
    assert [[r["y"].item() for r in step] for step in stream(requests)] == [[1, 2], [2, 3]]
    assert asyncio.run(collect(astream(requests))) == [[3, 6]]
    assert [r["y"].item() for r in asyncio.run(later(requests))] == [2, 4]


# -- @group_by_keys ----------------------------------------------------------------------------------

_MIXED = [
    Request({"b": np.array([[1, 2]]), "a": np.array([[1, 9]])}),
    Request({"b": np.array([[3, 4]])}),
    Request({"b": np.array([[7, 5], [8, 6]]), "a": np.array([[1, 1], [1, 1]])}),
    Request({"b": np.array([[1, 2], [1, 2]]), "a": np.array([[2, 4], [2, 4]])}),
    Request({"b": np.array([[1, 2], [1, 2], [9, 9]]), "a": np.array([[1, 1], [1, 1], [1, 1]])}),
    Request({"a": np.array([[1, 1], [1, 1], [1, 1]])}),
]


def test_group_by_keys_groups_requests_with_the_same_inputs():
    groups = []

    @group_by_keys
    def infer(requests):
        groups.append([sorted(r) for r in requests])
        return [{key: value * len(r) for key, value in r.items()} for r in requests]

    results = infer(_MIXED)
    assert groups == [[["a"]], [["a", "b"]] * 4, [["b"]]]
    for request, result in zip(_MIXED, results, strict=True):
        _equal(result, {key: value * len(request) for key, value in request.items()})


def test_group_by_keys_above_batch_and_wrong_result_count():
    @group_by_keys
    @batch
    def infer(b, a=None):
        return {"y": b.sum(axis=1) if a is None else (a + b).sum(axis=1)}

    results = infer(_MIXED[:3])
    assert [r["y"].tolist() for r in results] == [[13], [7], [14, 16]]
    with pytest.raises(InferenceError, match="returned 1 result"):
        group_by_keys(lambda requests: [{}])(_MIXED[:3])


# -- @group_by_values --------------------------------------------------------------------------------


def test_group_by_values_documented_example():
    calls = []

    @group_by_values("param1", "param2")
    def infer(sentences, param1, param2):
        calls.append(sentences.tolist())
        return {"out": np.char.upper(sentences.astype(bytes)).astype(object), "p": param1 * 10 + param2}

    sentences = np.array([b"Sentence1", b"Sentence2", b"Sentence3"], dtype=object)
    result = infer(sentences=sentences, param1=np.array([1, 1, 2]), param2=np.array([1, 1, 1]))
    assert calls == [[b"Sentence1", b"Sentence2"], [b"Sentence3"]]
    assert result["out"].tolist() == [b"SENTENCE1", b"SENTENCE2", b"SENTENCE3"]
    assert result["p"].tolist() == [11, 11, 21]


def test_group_by_values_bytes_rows_compare_by_content():
    calls = []

    @group_by_values("s")
    def infer(a, s):
        calls.append(a[:, 0].tolist())
        return {"a": a}

    t1, t2 = "t" + "1", "t" + "2"  # equal values, distinct objects
    s = np.array([[t1, t1], [t2, t2], [t1, t1], [t1, t1], [t2, t2], [t2, t1], [t1, t1]], dtype=object)
    a = np.arange(7).reshape(7, 1)
    result = infer(a=a, s=s)
    assert calls == [[0, 2, 3, 6], [5], [1, 4]]  # sorted: [t1,t1] < [t2,t1] < [t2,t2]
    np.testing.assert_array_equal(result["a"], a)


def test_group_by_values_pads_outputs_with_constant_padder():
    @group_by_values("a", pad_fn=ConstantPadder(0))
    def infer(a, output_length):
        return {"a": a, "output": np.ones((len(a), *np.max(output_length, axis=0).tolist()), dtype="int")}

    a = np.array([[1]] * 6 + [[2]] * 4)
    lengths = np.array([[8], [8], [16], [16], [4], [8], [3], [3], [3], [3]])
    result = infer(a=a, output_length=lengths)
    expected = np.zeros((10, 16), dtype=int)
    expected[:6] = 1
    expected[6:, :3] = 1
    _equal(result, {"a": a, "output": expected})


@pytest.mark.parametrize("dtype", [None, object])
def test_constant_padder_pads_bytes_with_empty_items(dtype):
    @group_by_values("a", pad_fn=ConstantPadder(0))
    def infer(a):
        if a[0, 0] == 1:
            return {"out": np.array([[b"foo", b"barxxx", b""]] * len(a), dtype=dtype)}
        return {"out": np.array([[b"1", b"22", b"3", b"4444"]] * len(a), dtype=dtype)}

    result = infer(a=np.array([[1], [2], [1]]))
    assert result["out"].tolist() == [[b"foo", b"barxxx", b"", b""], [b"1", b"22", b"3", b"4444"]] + [
        [b"foo", b"barxxx", b"", b""]
    ]


def test_group_by_values_errors():
    with pytest.raises(ValueError, match="must be used after the @batch decorator"):
        group_by_values("a")(batch(lambda a: {"a": a}))
    ragged = group_by_values("a")(lambda a: {"y": np.zeros((len(a), int(a[0])))})
    with pytest.raises(InferenceError, match="output 'y' has different shapes.*ConstantPadder"):
        ragged(a=np.array([1, 2]))
    with pytest.raises(InferenceError, match="no input 'k' to group by"):
        group_by_values("k")(lambda a: {"a": a})(a=np.array([1]))


def test_group_by_values_widens_bytes_instead_of_truncating():
    infer = group_by_values("a")(lambda a: {"y": np.array([b"x" * int(a[0])] * len(a))})
    assert infer(a=np.array([1, 3, 1]))["y"].tolist() == [b"x", b"xxx", b"x"]


# -- @fill_optionals ---------------------------------------------------------------------------------


def _ab_context(max_batch_size=8, a_type="TYPE_INT64"):
    return _context(max_batch_size, inputs=[("a", a_type, (2,)), ("b", "TYPE_INT64", (2,))])


def test_fill_optionals_tiles_defaults_per_row():
    @fill_optionals(a=np.array([-1, -2]), b=np.array([-5, -6]))
    def infer(requests):
        return requests

    bind_context(infer, _ab_context())
    requests = [Request(dict(r)) for r in _MIXED]
    results = infer(requests)
    assert all(r.keys() == {"a", "b"} and len(r["a"]) == len(r["b"]) for r in results)
    np.testing.assert_array_equal(results[1]["a"], [[-1, -2]])
    np.testing.assert_array_equal(results[-1]["b"], [[-5, -6]] * 3)


def test_fill_optionals_on_a_method_and_without_batching():
    class Model:
        @fill_optionals(a=np.array([-1, -2]))
        def __call__(self, requests):
            return requests

    model = Model()
    bind_context(model, _ab_context(max_batch_size=0))
    (result,) = model([Request({"b": np.array([3, 4])})])
    np.testing.assert_array_equal(result["a"], [-1, -2])


def test_fill_optionals_errors_name_the_input():
    with pytest.raises(TypeError, match="Could not use a=1 defaults as they are not NumPy arrays"):
        fill_optionals(a=1)
    wrong = [
        (fill_optionals(a=np.array([-1, -2])), _ab_context(a_type="TYPE_INT32"), "a: dtype=int64 expected_dtype=int32"),
        (fill_optionals(a=np.array([[-1, -2]])), _ab_context(), r"a: shape=\(1, 2\) expected_shape=\(2,\)"),
        (fill_optionals(c=np.array([1, 2])), _ab_context(), "no input\\(s\\) c"),
    ]
    for decorator, context, message in wrong:
        infer = decorator(lambda requests: requests)
        bind_context(infer, context)
        with pytest.raises(InferenceError, match=message):
            infer([Request({"b": np.array([[1, 2]])})])
    reset_context()
    with pytest.raises(InferenceError, match="no triton context is bound"):
        fill_optionals(a=np.array([1, 2]))(lambda r: r)([Request({})])


def test_fill_optionals_bytes_defaults_become_object_arrays():
    infer = fill_optionals(s=np.array(["hi"]))(lambda requests: requests)
    bind_context(infer, _context(4, inputs=[("s", "TYPE_STRING", (1,)), ("x", "TYPE_FP32", (1,))]))
    (result,) = infer([Request({"x": np.zeros((2, 1), np.float32)})])
    assert result["s"].dtype == object and result["s"].tolist() == [[b"hi"], [b"hi"]]


# -- @pad_batch --------------------------------------------------------------------------------------

_PARAMS = {"b": np.array([[1, 2], [1, 2], [9, 9]]), "a": np.array([[1], [1], [1]])}


@pytest.mark.parametrize(("preferred", "size"), [([2, 4, 6], 4), (None, 8)])
def test_pad_batch_repeats_the_last_row(preferred, size):
    seen = {}

    @pad_batch
    def infer(**inputs):
        seen.update(inputs)
        return inputs

    bind_context(infer, _context(8, preferred))
    result = infer(**_PARAMS)
    np.testing.assert_array_equal(seen["a"], [[1]] * size)
    np.testing.assert_array_equal(seen["b"], [[1, 2], [1, 2]] + [[9, 9]] * (size - 2))
    np.testing.assert_array_equal(result["b"], _PARAMS["b"])  # the padding is dropped from the outputs again


def test_pad_batch_under_batch_returns_unpadded_outputs_and_rejects_oversize():
    seen = []

    @batch
    @pad_batch
    def infer(x):
        seen.append(len(x))
        return {"y": x * 2}

    bind_context(infer, _context(8, [4]))
    results = infer([Request({"x": np.ones((1, 1))}), Request({"x": np.ones((2, 1))})])
    assert seen == [4] and [len(r["y"]) for r in results] == [1, 2]
    with pytest.raises(InferenceError, match="batch of 9 exceeds max_batch_size 8"):
        infer([Request({"x": np.ones((9, 1))})])


# -- @first_value ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "keys", "expected"),
    [
        ({"a": np.array([1, 2, 3]), "b": np.array([1, 1, 1])}, ["b"], {"a": np.array([1, 2, 3]), "b": np.int64(1)}),
        ({"a": np.array([1, 2]), "b": np.array([[[1]], [[1]]])}, ["b"], {"a": np.array([1, 2]), "b": np.int64(1)}),
        (
            {"a": np.array([1, 2]), "b": np.array([[[1], [2]], [[1], [2]]])},
            ["b"],
            {"a": np.array([1, 2]), "b": np.array([[1], [2]])},
        ),
        ({"b": np.array([b"v1", b"v1"], dtype=object)}, ["b"], {"b": b"v1"}),
        ({"b": np.array([[[b"v1"]], [[b"v1"]]], dtype=object)}, ["b"], {"b": b"v1"}),
        ({"b": np.array([1, 1])}, ["c"], {"b": np.array([1, 1])}),  # a missing (optional) key is skipped
        ({"a": np.array([2, 2]), "b": np.array([1, 1])}, ["a", "b", "c"], {"a": np.int64(2), "b": np.int64(1)}),
    ],
)
def test_first_value_below_batch(inputs, keys, expected):
    seen = {}

    @first_value(*keys)
    def infer(**kwargs):
        seen.update(kwargs)
        return kwargs

    _equal(infer(**inputs), expected)
    _equal(seen, expected)


def test_first_value_on_requests_and_options():
    infer = first_value("b", "optional")(lambda requests: requests)
    requests = [Request({"a": np.array([1, 2]), "b": np.array([[[1]], [[1]]])}) for _ in range(2)]
    assert [r["b"] for r in infer(requests)] == [np.int64(1)] * 2
    unsqueezed = first_value("b", squeeze_single_values=False)(lambda **kw: kw)
    np.testing.assert_array_equal(unsqueezed(b=np.array([[1], [1]]))["b"], [1])
    assert first_value("a", strict=False)(lambda **kw: kw)(a=np.array([[1], [2]]))["a"] == 1


def test_first_value_errors():
    with pytest.raises(ValueError, match="not allowed as keys for @first_value"):
        first_value("__triton_context__")
    with pytest.raises(InferenceError, match="The values on the 'a' input are not equal"):
        first_value("a")(lambda **kw: kw)(a=np.array([[1], [2], [2]]))
    rows = np.array([[b"x", b"y"], [b"x", b"y"]], dtype=object)  # equal rows of BYTES, unequal items
    np.testing.assert_array_equal(first_value("s")(lambda **kw: kw)(s=rows)["s"], [b"x", b"y"])
    infer = first_value("a")(lambda **kw: kw)
    bind_context(infer, _context(max_batch_size=0))
    with pytest.raises(InferenceError, match="only be used with models that support batching"):
        infer(a=np.array([[1]]))


# -- @triton_context and stacking ---------------------------------------------------------------------


def test_triton_context_passes_the_bound_context():
    @triton_context
    def infer(requests, **kwargs):
        return [{"n": kwargs["triton_context"].model_config.model_name}]

    with pytest.raises(InferenceError, match="must bound with triton"):
        infer([{}])
    infer.__triton_context__ = "Context"  # PyTriton's tests set it by hand
    assert triton_context(lambda r, triton_context: triton_context)  # decorating is always fine
    bind_context(infer, _context(name="named"))
    assert infer([{}]) == [{"n": "named"}]


def test_triton_context_on_a_class_reaches_the_constructor():
    @triton_context
    class Model:
        def __init__(self, triton_context):
            self.name = triton_context.model_name

    bind_context(Model, _context(name="cls"))
    assert Model().name == "cls"


def test_documented_stack_on_a_method_pickles_by_reference():
    class Model:
        @fill_optionals(temperature=np.array([0.7], dtype=np.float32))
        @group_by_keys
        @batch
        @group_by_values("temperature")
        @first_value("temperature")
        @triton_context
        def infer(self, triton_context, x, temperature, opt=None):
            assert np.isscalar(temperature)
            offset = 0 if opt is None else opt
            return {"y": x * temperature + offset, "batch": np.full(len(x), triton_context.model_config.max_batch_size)}

    context = _context(8, inputs=[("x", "TYPE_FP32", (1,)), ("temperature", "TYPE_FP32", (1,))])
    model = Model()
    bind_context(model.infer, context)
    requests = [
        Request({"x": np.array([[1.0]], np.float32)}),
        Request({"x": np.array([[1.0], [2.0]], np.float32), "temperature": np.array([[2.0], [2.0]], np.float32)}),
        Request({"x": np.array([[3.0]], np.float32), "temperature": np.array([[0.5]], np.float32)}),
    ]
    results = model.infer(requests)
    assert [r["y"].ravel().tolist() for r in results] == [pytest.approx([0.7]), [2.0, 4.0], [1.5]]
    assert results[0]["batch"].tolist() == [8]
    decorator = pickle.loads(pickle.dumps(batch(np.negative)))
    assert type(decorator) is batch and decorator.__wrapped__ is np.negative


def test_model_configs_lookup_like_pytriton():
    config = TritonModelConfig("m", max_batch_size=2)
    context = TritonContext(config)
    assert context.model_configs[test_model_configs_lookup_like_pytriton] is config and not config.raw
