"""A build plans before it writes: which containers its packages reach, each model pickled once, and a --model-version
merge's version policies, bound through the IR.

The packages a payload imports are resolved for every targeted container Python; one that cannot reach
some containers (no wheel for Python 3.10) leaves them out of a default build with one warning, and fails
a build that requires every container. pip is replaced by a resolver that refuses Python 3.10, so this
runs offline.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from repogen import ModelConfig, Repository, Tensor, VersionPolicy
from repogen.build import build_repository
from repogen.errors import BuildError, ContainersLeftOutWarning, UnreachableContainersError
from repogen.ir import lower
from repogen.ir.versions import merged_versions
from repogen.packages import resolve
from repogen.pickling import picklers as pickling
from repogen.triton.targets import resolve_targets

REASON = "PyYAML 6.0 (installed here) has no wheel for Python 3.10 on x86_64"


def _repository() -> Repository:
    """Two models whose callables use yaml, a distribution the build ships."""
    models = Repository()

    def reader(scale: float) -> Any:
        def infer(requests: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
            return [{"y": request["x"] * scale * len(yaml.__name__)} for request in requests]

        return infer

    for name in ("A", "B"):
        models.bind(
            model_name=name,
            infer_func=reader(2.0),
            inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=0),
        )
    return models


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, int]:
    """How often the build pickles a payload and resolves packages (for Python 3.10, refused)."""
    counts = {"pickled": 0, "resolved": 0}
    dumps = pickling.dumps

    def counting_dumps(obj: Any, *args: Any, **kwargs: Any) -> pickling.Pickled:
        if isinstance(obj, dict) and "infer_funcs" in obj:  # a payload, not a part searched for a culprit
            counts["pickled"] += 1
        return dumps(obj, *args, **kwargs)

    def refusing_310(requirements: Any, target: Any, numpy: str, cache: Path, what: str) -> tuple[()]:
        counts["resolved"] += 1
        if target.python == "3.10":
            raise UnreachableContainersError(f"{what} needs PyYAML, which cannot ship for Python 3.10", REASON)
        return ()

    monkeypatch.setattr(pickling, "dumps", counting_dumps)
    monkeypatch.setattr(resolve, "resolve", refusing_310)
    monkeypatch.setenv("REPOGEN_CACHE_DIR", str(tmp_path / "cache"))
    return counts


def test_a_package_that_cannot_reach_python_3_10_narrows_the_build_and_each_model_is_pickled_once(
    counted: dict[str, int], tmp_path: Path
) -> None:
    output = tmp_path / "repo"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = build_repository(_repository(), output)
    left_out = [w for w in caught if issubclass(w.category, ContainersLeftOutWarning)]
    assert len(left_out) == 1
    message = str(left_out[0].message)
    assert message.startswith(f"not targeting NGC 23.10-24.10 (Python 3.10): {REASON}. The repository serves ")
    assert message.endswith(
        "(Python 3.12). Pass --all-containers to make this an error, or --triton-release for one container"
    )
    assert counted["pickled"] == 2  # A and B, once each
    assert result.targets is not None and result.targets.pythons == ("3.12",)
    manifest = json.loads((output / "repogen.manifest.json").read_text())
    assert manifest["pythons"] == ["3.12"]
    assert sorted(manifest["packages"]) == ["A/1/packages/cp312-x86_64", "B/1/packages/cp312-x86_64"]
    for model in ("A", "B"):
        assert json.loads((output / model / "1" / "model.json").read_text())["pythons"] == ["3.12"]


def test_a_build_that_requires_every_container_fails_before_anything_is_written(
    counted: dict[str, int], tmp_path: Path
) -> None:
    output = tmp_path / "repo"
    with pytest.raises(UnreachableContainersError) as caught:
        build_repository(_repository(), output, triton_release=resolve_targets(None, all_containers=True))
    assert caught.value.reason == REASON
    assert str(caught.value).endswith("model 'A' needs PyYAML, which cannot ship for Python 3.10")
    assert caught.value.site is not None  # where model A was declared, in front of the message
    assert counted["pickled"] == 1 and not output.exists()


def test_a_version_build_binds_the_declared_policy_to_the_versions_present_through_the_ir() -> None:
    """``--model-version N`` sets the policy aside in the IR; the merge binds it to what the repository holds then."""
    models = Repository()
    models.bind(
        model_name="A",
        infer_func=lambda requests: requests,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=0, version_policy=VersionPolicy.specific(1, 3)),
    )
    spec = lower(models, version=3)
    assert spec.model("A").version_policy is None and spec.declared_policies == (("A", ("specific", (1, 3))),)
    assert merged_versions(spec, {"A": {1, 2, 3}}).model("A").version_policy == ("specific", (1, 3))
    with pytest.raises(
        BuildError, match=r"VersionPolicy.specific\(1, 3\) names versions \[1\] .*bound versions: \[3\]"
    ):
        merged_versions(spec, {"A": {3}})
