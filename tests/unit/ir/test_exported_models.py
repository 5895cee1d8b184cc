"""``models.torchscript`` and ``models.tensorrt``: declared tensors, Triton's platforms and file names.

The golden families tests/golden/torchscript and tests/golden/tensorrt keep the configs they write.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, Repository, Tensor, build_repository
from repogen.ir import lower
from repogen.ir.spec import IOSpec
from repogen.ondisk.validate import validate_repository

IMAGE = Tensor(dtype=np.float32, shape=(3, 8, 8))
SCORES = Tensor(dtype=np.float32, shape=(10,))


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "classifier.pt"
    path.write_bytes(b"PK\x03\x04 stands in for torch.jit.save")
    return path


def test_torchscript_tensors_take_triton_s_positional_names(module: Path, tmp_path: Path) -> None:
    repo = Repository()
    named = Tensor(name="logits", dtype=np.float32, shape=(10,))
    repo.torchscript("classifier", module, inputs=[IMAGE, IMAGE], outputs=[named, SCORES],
                     config=ModelConfig(max_batch_size=8))  # fmt: skip
    (network,) = lower(repo).networks
    assert (network.platform, network.backend, network.filename) == ("pytorch_libtorch", "", "model.pt")
    assert [t.name for t in network.model.inputs] == ["INPUT__0", "INPUT__1"]
    assert network.model.outputs == (
        IOSpec("logits", "TYPE_FP32", (10,)),
        IOSpec("OUTPUT__1", "TYPE_FP32", (10,)),
    )
    out = tmp_path / "repo"
    build_repository(repo, out)
    assert (out / "classifier" / "1" / "model.pt").read_bytes() == module.read_bytes()
    text = (out / "classifier" / "config.pbtxt").read_text()
    assert 'platform: "pytorch_libtorch"' in text and "backend" not in text
    assert validate_repository(out) == []
    (out / "classifier" / "1" / "model.pt").unlink()
    assert validate_repository(out)[0].message == (
        "pytorch_libtorch-backend model 'classifier' version 1 has no model.pt; expected classifier/1/model.pt "
        "(the TorchScript module the pytorch backend loads)"
    )


def test_a_tensorrt_plan_needs_named_tensors(tmp_path: Path) -> None:
    plan = tmp_path / "detector.plan"
    plan.write_bytes(b"engine")
    repo = Repository()
    repo.tensorrt("detector", plan, inputs=[IMAGE], outputs=[SCORES])
    with pytest.raises(BuildError) as caught:
        lower(repo)
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "model 'detector': input #1 has no name; a TensorRT plan's tensors are its engine's bindings, so name each "
        "Tensor as the plan does"
    )
    repo = Repository()
    repo.tensorrt("detector", plan, inputs=[Tensor(name="images", dtype=np.float16, shape=(3, 8, 8))],
                  outputs=[Tensor(name="boxes", dtype=np.float32, shape=(-1, 6))])  # fmt: skip
    (network,) = lower(repo).networks
    assert (network.platform, network.filename) == ("tensorrt_plan", "model.plan")


def test_the_declaration_is_required_and_the_file_must_exist(module: Path, tmp_path: Path) -> None:
    repo = Repository()
    repo.torchscript("classifier", module, inputs=[], outputs=[SCORES])
    with pytest.raises(BuildError) as caught:
        lower(repo)
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "model 'classifier': a TorchScript module's tensors are not read from the file; declare its inputs with "
        "inputs=[Tensor(name=..., dtype=..., shape=...)]"
    )
    repo = Repository()
    repo.tensorrt("detector", tmp_path / "missing.plan", inputs=[IMAGE], outputs=[SCORES])
    with pytest.raises(BuildError, match=r"model 'detector': the TensorRT plan .*missing.plan does not exist"):
        lower(repo)


def test_fuse_names_a_torchscript_step(module: Path) -> None:
    models = Repository()
    classify = models.torchscript("classifier", module, inputs=[IMAGE], outputs=[SCORES],
                                  config=ModelConfig(max_batch_size=8))  # fmt: skip

    @models.ensemble("Pipeline", inputs=[Tensor(name="image", dtype=np.float32, shape=(3, 8, 8))],
                     outputs=[Tensor(name="scores", dtype=np.float32, shape=(10,))],
                     config=ModelConfig(max_batch_size=8), fuse=True)  # fmt: skip
    def pipeline(image):
        return {"scores": classify(INPUT__0=image)["OUTPUT__0"]}

    with pytest.raises(BuildError, match=r"step 'classifier' is a TorchScript module \(platform 'pytorch_libtorch'\)"):
        lower(models)
