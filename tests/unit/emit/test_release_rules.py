"""What newer python_backends change for a generated model: model names r25.08 refuses,
a class model's ``is_ready`` (r26.03) as the stub asks it and as ``models.local()`` does, and the releases named."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.errors import BuildError, ReleaseRuleWarning
from repogen.local import backend_shim
from repogen.ondisk.validate import validate_repository
from repogen.packages.options import PackageOptions
from repogen.triton import python_backend
from repogen.triton.releases import NEWEST, RELEASES, get_release
from repogen.triton.targets import resolve_targets

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
CONFIG = ModelConfig(max_batch_size=4)


def _echo_models(name: str) -> Repository:
    models = Repository()

    @models.model(name, inputs=X, outputs=X, config=CONFIG)
    @batch
    def echo(x):
        return {"x": x}

    return models


@pytest.mark.parametrize("bad", list(python_backend.INVALID_NAME_CHARS))
def test_every_character_python_backend_refuses_is_named(bad: str) -> None:
    assert python_backend.invalid_characters(f"a{bad}b{bad}") == bad
    first = get_release(python_backend.NAME_CHECK_FROM)
    before = RELEASES[RELEASES.index(first) - 1]
    assert python_backend.refused_name(f"a{bad}", first) is not None
    assert python_backend.refused_name(f"a{bad}", before) is None
    assert python_backend.name_warnings(f"a{bad}", before)
    assert python_backend.refused_name("Plain_name-1.2", NEWEST) is None


def test_a_name_python_backend_refuses_fails_the_build_naming_character_and_release(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as refused:
        build_repository(_echo_models("Scale(x2)"), tmp_path / "all", triton_release="24.10")
    message = str(refused.value)
    assert message.startswith(f"{refused.value.site}: model name 'Scale(x2)' is not a valid Triton model name")
    assert (
        f"its '(' ')' would also stop the Python backend of NGC {python_backend.NAME_CHECK_FROM} and later" in message
    )
    assert "Invalid stub name: contains invalid characters" in message
    assert not (tmp_path / "all").exists()


def test_validate_refuses_a_hand_written_name_where_the_release_would_and_warns_before(tmp_path: Path) -> None:
    build_repository(_echo_models("Scale"), tmp_path / "repo")
    (tmp_path / "repo" / "Scale").rename(tmp_path / "repo" / "Scale(x2)")
    config = tmp_path / "repo" / "Scale(x2)" / "config.pbtxt"
    config.write_text(config.read_text().replace('name: "Scale"', 'name: "Scale(x2)"'))
    (tmp_path / "repo" / "repogen.manifest.json").unlink()  # hand-written now
    first = get_release(python_backend.NAME_CHECK_FROM)
    before = RELEASES[RELEASES.index(first) - 1]
    errors = [p for p in validate_repository(tmp_path / "repo", first) if not p.warning]
    assert len(errors) == 1 and "model name 'Scale(x2)' contains '(' ')'" in errors[0].message, errors
    assert f"from {first.label} on" in errors[0].message
    (warning,) = validate_repository(tmp_path / "repo", before)
    assert warning.warning and warning.message.endswith(f"; {before.label} still loads it")


class Warming:
    """A class model whose weights are 'loading' until a flag file exists."""

    def __init__(self, flag: str = "") -> None:
        self.flag = flag

    def is_ready(self):
        return Path(self.flag).exists() if self.flag else np.bool_(True)  # numpy's bool: the stub wants a bool

    @batch
    def __call__(self, x):
        return {"x": x}


HERE = (str(Path(__file__).parent),)  # this module ships with the models as source


def _class_models(cls: type, name: str = "Warm") -> Repository:
    models = Repository()
    models.bind(name, infer_func=cls, inputs=X, outputs=X, config=CONFIG)
    return models


def test_is_ready_is_refused_for_a_release_that_never_asks_it(tmp_path: Path) -> None:
    first = get_release(python_backend.IS_READY_FROM)
    with pytest.raises(BuildError) as refused:
        build_repository(_class_models(Warming), tmp_path / "old", triton_release="24.10", roots=HERE)
    message = str(refused.value)
    assert f"model 'Warm': Warming.is_ready answers the model's ready endpoint only from {first.label} on" in message
    assert "the targeted tritonserver 2.51.0 (NGC 24.10) never asks it" in message
    assert f"Target {first.ngc} or newer (--triton-release), or drop is_ready" in message
    with pytest.warns(ReleaseRuleWarning, match=r"model 'Warm': Warming\.is_ready answers .*; NGC 23\.10-"):
        build_repository(_class_models(Warming), tmp_path / "all", roots=HERE)
    build_repository(
        _class_models(Warming), tmp_path / "new", triton_release=NEWEST.ngc, roots=HERE
    )  # no warning needed


def _loaded(repository: Path, name: str = "Warm"):
    """The generated model as the stub loads it: model.py imported, initialize(args), then hasattr(is_ready)."""
    backend_shim.install()
    from repogen.runtime.triton_model import TritonPythonModel

    model = TritonPythonModel()
    config = {"name": name, "max_batch_size": 4, "output": [{"name": "x", "data_type": "TYPE_FP32", "dims": [-1]}]}
    model.initialize({
        "model_config": json.dumps(config), "model_instance_kind": "CPU", "model_instance_name": f"{name}_0_0",
        "model_instance_device_id": "0", "model_repository": str(repository / name), "model_version": "1",
        "model_name": name,
    })  # fmt: skip
    return model


def test_the_stub_finds_is_ready_only_on_models_that_define_it(tmp_path: Path) -> None:
    build_repository(_class_models(Warming), tmp_path / "ready", triton_release=NEWEST.ngc, roots=HERE)
    build_repository(_echo_models("Warm"), tmp_path / "plain", triton_release=NEWEST.ngc)
    ready = _loaded(tmp_path / "ready")
    answer = ready.is_ready()
    assert answer is True  # a Python bool, as the stub requires (the user's numpy bool converted)
    assert not hasattr(_loaded(tmp_path / "plain"), "is_ready")  # no IPC per probe for models without one


def test_local_honours_is_ready_sync_async_and_raising(tmp_path: Path) -> None:
    flag = tmp_path / "weights.done"

    class Loading(Warming):
        def __init__(self):
            super().__init__(str(flag))

    class Remote(Warming):
        async def is_ready(self):
            await asyncio.sleep(0)
            return flag.exists()

    class Broken(Warming):
        def is_ready(self):
            raise ConnectionError("feature store down")

    models = _class_models(Loading, "Loading")
    models.bind("Remote", infer_func=Remote, inputs=X, outputs=X, config=CONFIG)
    models.bind("Broken", infer_func=Broken, inputs=X, outputs=X, config=CONFIG)
    models.bind("Plain", infer_func=lambda requests: requests, inputs=X, outputs=X, config=CONFIG)
    local = models.local()
    assert [local.is_ready(m) for m in ("Loading", "Remote", "Broken", "Plain")] == [False, False, False, True]
    flag.write_text("done")
    assert [local.is_ready(m) for m in ("Loading", "Remote", "Broken", "Plain")] == [True, True, False, True]
    assert local.infer("Loading", {"x": np.ones((1, 2), np.float32)})["x"].tolist() == [[1.0, 1.0]]


def test_the_decoupled_bls_crash_shows_in_exactly_one_ngc_container() -> None:
    from repogen.triton.known_issues import BLS_STREAM_WITHOUT_GIL

    affected = [r.ngc for r in RELEASES if BLS_STREAM_WITHOUT_GIL.affects(r, r.python)]
    first_312 = next(r for r in RELEASES if r.python == "3.12")
    assert affected == [first_312.ngc]  # 24.11: Python 3.12 with python_backend r24.11, before the fix
    assert BLS_STREAM_WITHOUT_GIL.affects(get_release("24.10"), "3.12")  # PyPI's 2.51 + 3.12 stub: the stand-in


def test_the_unanswered_bls_stream_is_allowed_for_on_2_39_alone_of_the_served_releases() -> None:
    from repogen.triton.known_issues import BLS_STREAM_UNANSWERED
    from repogen.triton.releases import EMBEDDED

    served = {r.tritonserver for r in EMBEDDED for python in r.stub_pythons if BLS_STREAM_UNANSWERED.affects(r, python)}
    assert served == {"2.39.0"}


def test_servers_before_uuid_regions_get_a_region_prefix_of_their_own() -> None:
    first = get_release(python_backend.UUID_REGIONS_FROM)
    before = RELEASES[RELEASES.index(first) - 1]
    assert python_backend.region_prefix_args(before, "4242_8000") == [
        "--backend-config=python,shm-region-prefix-name=repogen_4242_8000_"
    ]
    assert python_backend.region_prefix_args(first, "4242_8000") == []
    assert python_backend.region_prefix_args(before, "a/b;c")[0].endswith("=repogen_a_b_c_")


RECORD = PackageOptions(mode="record")  # torch, the model's framework, is not what these tests are about


def _bf16_models() -> Repository:
    """A torch model with a BF16 input and output (numpy has no bfloat16)."""
    models = Repository()
    half = [Tensor(name="h", dtype="bfloat16", shape=(-1,))]

    @models.model("Half", inputs=half, outputs=half, config=ModelConfig(max_batch_size=4, tensors="torch"))
    def twice(requests):
        return [{"h": request["h"] * 2} for request in requests]

    return models


def test_bf16_is_refused_for_a_release_whose_stub_refuses_it_and_warned_of_for_several(tmp_path: Path) -> None:
    first = get_release(python_backend.BF16_FROM)
    before = RELEASES[RELEASES.index(first) - 1]
    with pytest.raises(BuildError) as refused:
        build_repository(_bf16_models(), tmp_path / "old", triton_release=before.ngc, packages=RECORD)
    message = str(refused.value)
    assert message.startswith(f"{refused.value.site}: model 'Half': input 'h', output 'h' are BF16")
    assert f"from {first.label} on (python_backend r{first.ngc})" in message
    assert '"TYPE_BF16 not currently supported."' in message
    assert f"the build targets NGC {before.ngc}. Target {first.ngc} or newer (--triton-release)" in message
    with pytest.raises(BuildError, match=r"the build targets NGC 23\.10-24\.07\."):
        build_repository(_bf16_models(), tmp_path / "every", triton_release=resolve_targets(all_containers=True))
    with pytest.warns(ReleaseRuleWarning, match=r"model 'Half': .*: NGC 23\.10-24\.07 serve it without answering"):
        build_repository(_bf16_models(), tmp_path / "all", packages=RECORD)
    build_repository(_bf16_models(), tmp_path / "new", triton_release=first.ngc, packages=RECORD)  # no warning


def test_validate_names_the_bf16_tensors_a_release_refuses(tmp_path: Path) -> None:
    build_repository(_bf16_models(), tmp_path / "repo", triton_release="24.10", packages=RECORD)
    assert validate_repository(tmp_path / "repo", get_release("24.08")) == []
    errors = [p.message for p in validate_repository(tmp_path / "repo", get_release("24.07")) if not p.warning]
    assert any(
        "model 'Half': input 'h', output 'h' are BF16" in e and e.endswith("(NGC 24.07) is one of them") for e in errors
    ), errors
