"""``Triton``/``TritonConfig`` without a server: the config's mapping onto ``repogen serve``'s options and
tritonserver's arguments, the fields refused (each naming itself and why), a build error from ``run()``, and a
module-level ``Triton`` built by ``repogen build server.py:triton``."""

from __future__ import annotations

import dataclasses
import pathlib
import textwrap
from pathlib import Path

import numpy as np
import pytest

from repogen import (
    BuildError,
    Repository,
    Tensor,
    Triton,
    TritonConfig,
    TritonLifecyclePolicy,
    TritonSecurityConfig,
    build_app,
)
from repogen.build_and_serve import serve_options
from repogen.dsl import runners
from repogen.errors import UsageError
from repogen.ir.lower import lower
from repogen.server.running.serve_options import EXIT_TIMEOUT
from repogen.triton.restricted_apis import DEFAULT_RESTRICTED

PYTRITON_FIELDS = [  # pytriton/triton.py's TritonConfig, in its order
    "model_repository", "id", "log_verbose", "log_file", "exit_timeout_secs", "exit_on_error", "strict_readiness",
    "allow_http", "http_address", "http_port", "http_header_forward_pattern", "http_thread_count",
    "http_restricted_api", "allow_grpc", "grpc_address", "grpc_port", "grpc_header_forward_pattern",
    "grpc_infer_allocation_pool_size", "grpc_use_ssl", "grpc_use_ssl_mutual", "grpc_server_cert", "grpc_server_key",
    "grpc_root_cert", "grpc_infer_response_compression_level", "grpc_keepalive_time", "grpc_keepalive_timeout",
    "grpc_keepalive_permit_without_calls", "grpc_http2_max_pings_without_data",
    "grpc_http2_min_recv_ping_interval_without_data", "grpc_http2_max_ping_strikes", "grpc_restricted_protocol",
    "allow_metrics", "allow_gpu_metrics", "allow_cpu_metrics", "metrics_interval_ms", "metrics_port",
    "metrics_address", "allow_sagemaker", "sagemaker_port", "sagemaker_safe_port_range", "sagemaker_thread_count",
    "allow_vertex_ai", "vertex_ai_port", "vertex_ai_thread_count", "vertex_ai_default_model", "metrics_config",
    "trace_config", "cache_config", "cache_directory", "buffer_manager_thread_count",
]  # fmt: skip
FORMER_FIELDS = ["response_cache_byte_size"]  # PyTriton 0.1's, still in its docs: taken, with a DeprecationWarning


def test_the_fields_are_pytritons_with_its_defaults():
    assert [f.name for f in dataclasses.fields(TritonConfig)] == PYTRITON_FIELDS + FORMER_FIELDS
    assert all(value is None for value in TritonConfig().to_dict().values())


def test_triton_is_a_repository_and_a_context_manager():
    with Triton() as triton:
        assert isinstance(triton, Repository)
        assert not triton.is_alive() and triton.stop() is False


def test_the_config_maps_onto_serve_options():
    config = TritonConfig(
        http_port=9000, grpc_port=0, log_verbose=2, http_address="127.0.0.1", grpc_address="localhost",
        exit_on_error=True, strict_readiness=False, exit_timeout_secs=10, allow_metrics=False, id="mine",
        cache_config=["local,size=1048576"], trace_config=["level=TIMESTAMPS", "rate=1"],
        grpc_server_cert=pathlib.Path("/certs/server.pem"),
    )  # fmt: skip
    triton = Triton(config=config, triton_release="24.10", server_python="3.10")
    options = serve_options(triton, Path("/tmp/repo"))
    assert (options.target, options.http_port, options.grpc_port, options.metrics_port) == ("/tmp/repo", 9000, 0, None)
    assert (options.log_verbose, options.server_python, options.triton_release.tritonserver) == (2, "3.10", "2.51.0")
    assert options.tritonserver_args == (
        "--id=mine", "--exit-timeout-secs=10", "--exit-on-error=true", "--strict-readiness=false",
        "--grpc-server-cert=/certs/server.pem", "--allow-metrics=false", "--trace-config=level=TIMESTAMPS",
        "--trace-config=rate=1", "--cache-config=local,size=1048576",
    )  # fmt: skip
    options.check()  # none is one serve sets itself
    arguments = options.server_arguments([])
    assert arguments.index("--exit-on-error=true") > arguments.index("--exit-on-error=false")  # the user's wins
    assert EXIT_TIMEOUT not in arguments  # the config's exit timeout replaces serve's


def test_defaults_are_repogen_serves():
    triton = Triton()
    options = serve_options(triton, Path("/tmp/repo"))
    assert options.tritonserver_args == () and options.log_verbose == 0
    assert (options.http_port, options.grpc_port, options.metrics_port) == (None, None, None)  # 8000, 8001, 8002
    assert options.triton_release is None and options.server_python is None  # repogen serve's pairing
    # PyTriton 0.7's default security: its endpoints, behind a key made with the Triton, known before run()
    assert options.restrict == DEFAULT_RESTRICTED and options.token == triton.get_access_token()
    assert len(triton.get_access_token() or "") >= 32 and Triton().get_access_token() != triton.get_access_token()


@pytest.mark.parametrize(
    ("security", "restrict", "token"),
    [
        (TritonSecurityConfig(access_token="my-secure-token-12345"), DEFAULT_RESTRICTED, "my-secure-token-12345"),
        (
            TritonSecurityConfig(
                access_token="k", restricted_endpoints=["statistics", "inference", "model-repository"]
            ),
            ("inference", "model-repository", "statistics"),
            "k",
        ),  # tritonserver's order
        (TritonSecurityConfig(restricted_endpoints=[]), (), None),  # PyTriton's way back to an open server
    ],
    ids=["token", "endpoints", "open"],
)
def test_the_security_config_maps_onto_serves_key_and_restricted_apis(security, restrict, token):
    triton = Triton(security_config=security)
    options = serve_options(triton, Path("/tmp/repo"))
    assert (options.restrict, options.token, triton.get_access_token()) == (restrict, token, token)


def test_a_security_config_names_an_unknown_endpoint_and_the_valid_ones():
    with pytest.raises(
        UsageError,
        match=r"'inferencing' is no endpoint tritonserver restricts; valid endpoints are: "
        r"health, inference, logging, metadata, model-config, model-repository, ",
    ):
        TritonSecurityConfig(restricted_endpoints=["inferencing"])  # fmt: skip


def test_only_pytritons_default_lifecycle_policy_applies():
    Triton(triton_lifecycle_policy=TritonLifecyclePolicy())
    with pytest.raises(UsageError, match=r"local_model_store=True\) cannot apply: it is PyTriton's Vertex AI mode"):
        Triton(triton_lifecycle_policy=TritonLifecyclePolicy(launch_triton_on_startup=False, local_model_store=True))


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"http_address": "0.0.0.0"}, "http_address='0.0.0.0'"),
        ({"grpc_address": "10.0.0.1"}, "grpc_address='10.0.0.1'"),
        ({"metrics_address": "0.0.0.0"}, "metrics_address='0.0.0.0'"),
        ({"allow_http": False}, "allow_http=False"),
        ({"allow_http": False, "allow_grpc": False}, "leaves no endpoint"),
        ({"model_repository": pathlib.Path("/models")}, "model_repository=...) cannot apply: repogen builds"),
        ({"log_file": pathlib.Path("/tmp/log")}, "log_file=...) cannot apply"),
        ({"http_restricted_api": "trace:k=v"}, "http_restricted_api=...) cannot apply: Triton(security_config="),
        ({"grpc_restricted_protocol": "trace,k=v"}, "grpc_restricted_protocol=...) cannot apply: Triton(security_"),
        ({"allow_sagemaker": True}, "allow_sagemaker=True) cannot apply"),
        ({"allow_vertex_ai": True}, "allow_vertex_ai=True) cannot apply"),
        ({"vertex_ai_port": 8080}, "vertex_ai_port=...) cannot apply"),
    ],
)
def test_fields_that_cannot_apply_are_refused_naming_why(fields, named):
    with pytest.raises(UsageError) as refused:
        TritonConfig(**fields)
    assert named in str(refused.value)
    assert "leave" in str(refused.value)  # and what to do


def test_endpoints_repogen_does_not_open_may_stay_closed():
    assert TritonConfig(allow_sagemaker=False, allow_vertex_ai=False).server_arguments() == [
        "--allow-sagemaker=false", "--allow-vertex-ai=false",
    ]  # fmt: skip


def test_a_field_set_after_the_config_was_made_is_refused_by_run():
    triton = Triton(config=TritonConfig())
    triton.config.http_address = "0.0.0.0"
    with pytest.raises(UsageError, match=r"http_address='0.0.0.0'"):
        triton.run()
    assert not triton.is_alive()


def test_a_workspace_is_refused():
    with pytest.raises(UsageError, match=r"Triton\(workspace=...\) cannot apply"):
        Triton(workspace="/tmp/ws")


def _bad_bind(triton: Triton) -> int:
    triton.bind(
        model_name="Twice",
        infer_func=lambda **inputs: inputs,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="y", dtype=np.float32, shape=(-1,))],
    )
    return _bad_bind.__code__.co_firstlineno + 1


def test_a_build_error_in_run_is_builds_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR anew
    triton = Triton()
    line = _bad_bind(triton)
    with pytest.raises(BuildError) as failed:
        triton.run()
    assert f"test_pytriton_server_config.py:{line}" in str(failed.value)
    assert not triton.is_alive() and list(tmp_path.iterdir()) == []


def test_a_module_level_triton_builds_with_repogen_build(tmp_path):
    server = tmp_path / "server.py"
    server.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from repogen import Tensor, Triton, TritonConfig

            def _identity(x):
                return {"y": x}

            triton = Triton(config=TritonConfig(http_port=8000))
            triton.bind(model_name="Identity", infer_func=_identity,
                        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
                        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])

            if __name__ == "__main__":
                with triton:
                    triton.serve()
            """
        )
    )
    result = build_app(f"{server}:triton", tmp_path / "repo")
    assert (tmp_path / "repo" / "Identity" / "config.pbtxt").is_file()
    assert [model.name for model in result.spec.models] == ["Identity"]


def test_building_pytritons_server_py_as_it_is_names_the_fix_instead_of_serving(tmp_path):
    server = tmp_path / "server.py"
    server.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from repogen import Tensor, Triton

            with Triton() as triton:
                triton.bind(model_name="Identity", infer_func=lambda x: {"y": x},
                            inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
                            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
                triton.serve()
            """
        )
    )
    with pytest.raises(BuildError) as refused:
        build_app(f"{server}:triton", tmp_path / "repo")
    assert 'if __name__ == "__main__"' in str(refused.value)
    assert not (tmp_path / "repo").exists()


def test_from_env_reads_pytritons_variables_with_their_types():
    config = TritonConfig.from_env(
        {
            "PYTRITON_TRITON_CONFIG_GRPC_PORT": "45436",
            "PYTRITON_TRITON_CONFIG_LOG_VERBOSE": "4",
            "PYTRITON_TRITON_CONFIG_EXIT_ON_ERROR": "false",  # PyTriton's bool("false") is True; False here
            "PYTRITON_TRITON_CONFIG_STRICT_READINESS": "1",
            "PYTRITON_TRITON_CONFIG_GRPC_ROOT_CERT": "/certs/ca.pem",
            "PYTRITON_TRITON_CONFIG_CACHE_CONFIG_1": "local,size=1048576",
            "PYTRITON_TRITON_CONFIG_CACHE_CONFIG_0": "redis,host=127.0.0.1",
            "PYTRITON_TRITON_CONFIG_TRACE_CONFIG": "rate=100,level=TIMESTAMPS",
            "HOME": "/root",
        }
    )
    assert (config.grpc_port, config.log_verbose, config.exit_on_error, config.strict_readiness) == (
        45436,
        4,
        False,
        True,
    )
    assert config.grpc_root_cert == pathlib.Path("/certs/ca.pem")
    assert config.cache_config == ["redis,host=127.0.0.1", "local,size=1048576"]  # by index, not by name order
    assert config.trace_config == ["rate=100", "level=TIMESTAMPS"]  # one variable, split on commas as PyTriton does
    assert TritonConfig.from_env({}) == TritonConfig()
    assert TritonConfig.from_dict({"http_port": "8010", "unknown": 1}) == TritonConfig(http_port=8010)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("HTTP_PORT", "eighty", "invalid literal for int()"),
        ("EXIT_ON_ERROR", "maybe", "'maybe' is not a boolean: say one of 1, true, yes, on, 0, false, no, off"),
        ("HTTP_ADDRESS", "0.0.0.0", "TritonConfig(http_address='0.0.0.0'): Triton.run serves on 127.0.0.1 only"),
        ("MODEL_REPOSITORY", "/models", "TritonConfig(model_repository=...) cannot apply"),
    ],
)
def test_a_variable_that_does_not_apply_is_refused_naming_itself(field, value, message):
    variable = f"PYTRITON_TRITON_CONFIG_{field}"
    with pytest.raises(UsageError) as raised:
        TritonConfig.from_env({variable: value})
    assert str(raised.value).startswith(f"{variable}={value!r}: {message}"), str(raised.value)


def test_a_variable_naming_no_field_warns():
    with pytest.warns(
        UserWarning, match=r"PYTRITON_TRITON_CONFIG_GRPC_PROT names no TritonConfig field \('grpc_prot'\)"
    ):
        assert TritonConfig.from_env({"PYTRITON_TRITON_CONFIG_GRPC_PROT": "1"}) == TritonConfig()


def test_triton_takes_the_variables_under_the_config_it_is_given(monkeypatch):
    monkeypatch.setenv("PYTRITON_TRITON_CONFIG_HTTP_PORT", "8010")
    monkeypatch.setenv("PYTRITON_TRITON_CONFIG_GRPC_PORT", "8011")
    assert (Triton().config.http_port, Triton().config.grpc_port) == (8010, 8011)
    given = Triton(config=TritonConfig(grpc_port=9001)).config
    assert (given.http_port, given.grpc_port) == (
        8010,
        9001,
    )  # PyTriton's order: given, then environment, then defaults
    monkeypatch.setenv("PYTRITON_TRITON_CONFIG_ALLOW_HTTP", "false")
    with pytest.raises(
        UsageError, match="PYTRITON_TRITON_CONFIG_ALLOW_HTTP='false': TritonConfig\\(allow_http=False\\)"
    ):
        Triton()


class _FakeServed:
    """A stand-in for the server ``run()`` starts: it lowers the models as the build does, and keeps what each run
    served, by model name."""

    runs: list[dict[str, object]] = []

    def __init__(self, triton: Triton) -> None:
        lower(triton)
        self.runs.append({d.name: d.infer_funcs[0] for d in triton.definitions})

    def stop(self) -> None:
        pass

    def is_alive(self) -> bool:
        return True


def _bind(triton: Triton, name: str, func: object) -> None:
    io = {"inputs": [Tensor(name="x", dtype=np.float32, shape=(-1,))],
          "outputs": [Tensor(name="y", dtype=np.float32, shape=(-1,))]}  # fmt: skip
    triton.bind(model_name=name, infer_func=func, **io)


def _first(requests):
    return [{"y": r["x"]} for r in requests]


def _second(requests):
    return [{"y": r["x"] * 2} for r in requests]


def test_a_model_bound_again_after_stop_replaces_its_binding_as_pytritons_notebook_does(monkeypatch):
    """PyTriton's add_sub_notebook: run, stop, redefine the callable, bind it under the same name, run again."""
    monkeypatch.setattr(runners, "_server_runner", _FakeServed)
    monkeypatch.setattr(_FakeServed, "runs", [])
    triton = Triton()
    _bind(triton, "AddSub", _first)
    _bind(triton, "Other", _first)
    triton.run()
    assert triton.stop() is True
    _bind(triton, "AddSub", _second)
    triton.run()
    triton.stop()
    assert _FakeServed.runs == [{"AddSub": _first, "Other": _first}, {"AddSub": _second, "Other": _first}]
    assert [d.name for d in triton.definitions] == ["Other", "AddSub"]


def test_binding_a_name_twice_between_stops_is_still_refused_naming_both_lines(monkeypatch):
    monkeypatch.setattr(runners, "_server_runner", _FakeServed)
    triton = Triton()
    _bind(triton, "AddSub", _first)
    triton.run()
    triton.stop()
    _bind(triton, "AddSub", _second)
    _bind(triton, "AddSub", _first)  # a second bind, after the one that replaced the binding of before the stop
    with pytest.raises(BuildError, match=r"model 'AddSub' is bound twice with model_version=1 \(the first is at "):
        triton.run()


def test_a_bind_while_the_server_runs_is_refused_naming_the_fix(monkeypatch):
    monkeypatch.setattr(runners, "_server_runner", _FakeServed)
    with Triton() as triton:
        _bind(triton, "AddSub", _first)
        triton.run()
        with pytest.raises(UsageError, match=r"Triton.bind\(model_name='Late'\) while the server runs: .* stop\(\) "):
            _bind(triton, "Late", _second)
    assert [d.name for d in triton.definitions] == ["AddSub"]
