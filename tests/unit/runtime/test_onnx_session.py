"""The Python-backend ONNX session: one ``session.run`` per group of same-shaped requests, a failing request
failing alone, and onnxruntime's options read from the config as Triton's onnxruntime backend reads them.

The session is a stand-in that runs the graph ``y = x @ W`` row by row with numpy and records each run
(onnxruntime itself runs in tests/integration/test_onnx_models.py, in the server), so this needs neither
onnx nor onnxruntime.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from fake_onnx import FakeSession, W

from repogen.runtime import onnx_options
from repogen.runtime.onnx_options import OnnxOptionError, cgroup_cpu_quota, default_intra_op_threads, session_options
from repogen.runtime.onnx_session import OnnxSession
from repogen.runtime.request import StepFailure


def _session(outputs=("y",), batching=True, strings=False):
    session = object.__new__(OnnxSession)
    session.session = FakeSession()
    session.run_options = None
    session.outputs = list(outputs)
    session.batching = batching
    session.strings = strings
    return session


def _x(rows, columns=3, value=1.0):
    return np.full((rows, columns), value, np.float32)


def test_a_batch_of_one_shape_is_one_run_and_each_request_gets_its_rows():
    session = _session()
    requests = [{"x": _x(1, value=1)}, {"x": _x(3, value=2)}, {"x": _x(2, value=3)}]
    results = session(requests)
    assert session.session.runs == [(6, 3)]
    for request, result in zip(requests, results, strict=True):
        np.testing.assert_array_equal(result["y"], request["x"] @ W)


def test_other_shapes_form_groups_of_their_own():
    session = _session()
    requests = [{"x": _x(1)}, {"x": _x(2, columns=4)}, {"x": _x(2)}, {"x": _x(1, columns=4)}, {"x": _x(1, columns=5)}]
    session.session.run = _any_width(session.session)
    results = session(requests)
    assert sorted(session.session.runs) == [(1, 5), (3, 3), (3, 4)]
    for request, result in zip(requests, results, strict=True):
        np.testing.assert_array_equal(result["y"], request["x"].sum(axis=1, keepdims=True))


def test_requests_with_other_inputs_form_groups_of_their_own():
    session = _session()
    seen = []

    def run(outputs, feed, run_options):
        seen.append({name: value.shape for name, value in feed.items()})
        return [feed["x"] * (2 if "bias" in feed else 1)]

    session.session.run = run
    requests = [{"x": _x(1)}, {"x": _x(2), "bias": _x(2)}, {"x": _x(1)}]  # an optional input sent by one
    results = session(requests)
    assert seen == [{"x": (2, 3)}, {"x": (2, 3), "bias": (2, 3)}]
    assert [r["y"].tolist() for r in results] == [[[1.0] * 3], [[2.0] * 3] * 2, [[1.0] * 3]]


def _any_width(fake):
    def run(outputs, feed, run_options):
        fake.runs.append(feed["x"].shape)
        return [feed["x"].sum(axis=1, keepdims=True)]

    return run


def test_a_failing_request_fails_alone():
    session = _session()
    requests = [{"x": _x(1)}, {"x": _x(1, value=-1)}, {"x": _x(2)}]
    results = session(requests)
    assert session.session.runs == [(4, 3), (1, 3), (1, 3), (2, 3)]  # the batch, then each request alone
    assert type(results[1]) is StepFailure and "negative index" in str(results[1].exc)
    np.testing.assert_array_equal(results[0]["y"], _x(1) @ W)
    np.testing.assert_array_equal(results[2]["y"], _x(2) @ W)


def test_an_output_without_the_batch_axis_runs_request_by_request():
    session = _session(outputs=("y", "n"))
    results = session([{"x": _x(1)}, {"x": _x(2)}])
    assert session.session.runs == [(3, 3), (1, 3), (2, 3)]
    assert [int(r["n"]) for r in results] == [1, 2]


def test_without_batching_or_alone_each_request_runs_as_it_came():
    session = _session(batching=False)
    session([{"x": _x(1)}, {"x": _x(1)}])
    assert session.session.runs == [(1, 3), (1, 3)]
    session = _session()
    assert type(session([{"x": _x(1, value=-1)}])[0]) is StepFailure


def test_bytes_reach_onnxruntime_as_str_and_come_back_as_bytes():
    session = _session(outputs=("echo",), strings=True)
    seen = []

    def run(outputs, feed, run_options):
        seen.append(feed["text"].tolist())
        return [feed["text"]]

    session.session.run = run
    text = [np.array([[b"a"]], dtype=object), np.array([[b"bc"], [b"d"]], dtype=object)]
    results = session([{"text": t} for t in text])
    assert seen == [[["a"], ["bc"], ["d"]]]
    assert [r["echo"].tolist() for r in results] == [[[b"a"]], [[b"bc"], [b"d"]]]


# -- options ---------------------------------------------------------------------------------------


class _Options:
    def __init__(self):
        self.entries = {}

    def add_session_config_entry(self, key, value):
        self.entries[key] = value

    def add_run_config_entry(self, key, value):
        self.entries[key] = value


ORT = types.SimpleNamespace(
    SessionOptions=_Options,
    RunOptions=_Options,
    ExecutionMode=types.SimpleNamespace(ORT_SEQUENTIAL="sequential", ORT_PARALLEL="parallel"),
    GraphOptimizationLevel=types.SimpleNamespace(
        ORT_ENABLE_ALL="all", ORT_ENABLE_EXTENDED="extended", ORT_ENABLE_BASIC="basic", ORT_DISABLE_ALL="none"
    ),
)


def _config(instances=((1, ()),), level=None, **parameters):
    config = {
        "instance_group": [{"count": count, "gpus": list(gpus)} for count, gpus in instances],
        "parameters": {key.replace("__", "."): {"string_value": value} for key, value in parameters.items()},
    }
    if level is not None:
        config["optimization"] = {"graph": {"level": level}}
    return config


def test_the_triton_backend_s_parameters_set_the_session(monkeypatch):
    monkeypatch.setattr(onnx_options, "available_cores", lambda: 8)
    config = _config(
        level=2, intra_op_thread_count="3", inter_op_thread_count="2", execution_mode="1", enable_mem_arena="0",
        enable_mem_pattern="true", memory__enable_memory_arena_shrinkage="cpu:0",
        session__use_device_allocator_for_initializers="1",
    )  # fmt: skip
    options, run_options, threads = session_options(ORT, config, "M")
    assert threads == 3
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (3, 2)
    assert (options.execution_mode, options.graph_optimization_level) == ("parallel", "none")
    assert (options.enable_cpu_mem_arena, options.enable_mem_pattern) == (False, True)
    assert options.entries == {"session.use_device_allocator_for_initializers": "1", **NO_SPIN}
    assert run_options.entries == {"memory.enable_memory_arena_shrinkage": "cpu:0"}


NO_SPIN = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}


def test_by_default_the_pools_do_not_spin_and_onnxruntime_s_keys_turn_it_back_on():
    options, _, _ = session_options(ORT, _config(), "M")
    assert options.entries == NO_SPIN
    options, _, _ = session_options(ORT, _config(session__intra_op__allow_spinning="true"), "M")
    assert options.entries == {**NO_SPIN, "session.intra_op.allow_spinning": "1"}
    options, _, _ = session_options(ORT, _config(session__inter_op__allow_spinning="1"), "M")
    assert options.entries == {**NO_SPIN, "session.inter_op.allow_spinning": "1"}


@pytest.mark.parametrize(
    ("instances", "cores", "threads"),
    [(((1, ()),), 8, 8), (((2, ()),), 8, 4), (((3, ()),), 2, 1), (((1, ()), (1, (0, 1))), 12, 4), ((), 4, 4)],
)
def test_by_default_the_cores_are_shared_among_the_instances(monkeypatch, instances, cores, threads):
    monkeypatch.setattr(onnx_options, "available_cores", lambda: cores)
    options, _, chosen = session_options(ORT, _config(instances), "M")
    assert chosen == threads == options.intra_op_num_threads
    assert options.execution_mode == "sequential" and options.graph_optimization_level == "all"
    assert not hasattr(options, "inter_op_num_threads") and not hasattr(options, "enable_cpu_mem_arena")
    assert default_intra_op_threads(_config(instances), cores) == threads


def test_zero_threads_is_onnxruntime_s_own_default():
    options, _, threads = session_options(ORT, _config(intra_op_thread_count="0"), "M")
    assert threads == 0 and not hasattr(options, "intra_op_num_threads")


@pytest.mark.parametrize("level", [-1, 1, 2, 0])
def test_the_graph_level_is_read_where_triton_reads_it(level):
    options, _, _ = session_options(ORT, _config(level=level), "M")
    assert options.graph_optimization_level == {-1: "basic", 1: "extended", 2: "none", 0: "all"}[level]


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"intra_op_thread_count": "two"}, "model 'M': parameter intra_op_thread_count is 'two'; give a number"),
        ({"inter_op_thread_count": "-1"}, "model 'M': parameter inter_op_thread_count is '-1'; give a number"),
        ({"execution_mode": "2"}, "model 'M': parameter execution_mode is '2'; onnxruntime takes 0 (sequential"),
        ({"enable_mem_arena": "maybe"}, "model 'M': parameter enable_mem_arena is 'maybe'; give 1 or 0"),
        (
            {"session__intra_op__allow_spinning": "spin"},
            "model 'M': parameter session.intra_op.allow_spinning is 'spin'; give 1 or 0",
        ),
    ],
)
def test_a_value_onnxruntime_cannot_take_names_the_parameter(parameters, message):
    with pytest.raises(OnnxOptionError) as caught:
        session_options(ORT, _config(**parameters), "M")
    assert str(caught.value).startswith(message)


def test_a_cgroup_quota_caps_the_cores(tmp_path):
    assert cgroup_cpu_quota(str(tmp_path)) is None
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(str(tmp_path)) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(str(tmp_path)) == 2
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(str(v1)) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("400000\n")
    assert cgroup_cpu_quota(str(v1)) == 4
