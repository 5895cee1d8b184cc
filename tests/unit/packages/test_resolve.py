"""How pip's refusals become the user's fix, and which wheels a container's C library loads."""

from __future__ import annotations

import pytest

from repogen.errors import BuildError
from repogen.packages import resolve
from repogen.packages.options import PackageOptions
from repogen.packages.wheel_targets import WheelTarget, wheel_targets
from repogen.triton.targets import resolve_targets

PY310 = WheelTarget("3.10", "x86_64", "2.35", "NGC 23.10-24.10 (Python 3.10)")

NO_WHEEL = """\
ERROR: Ignored the following versions that require a different python version: 3.5 Requires-Python >=3.11
ERROR: Could not find a version that satisfies the requirement networkx==3.5 (from versions: 2.8.8, 3.0, 3.4.1, 3.4.2)
ERROR: No matching distribution found for networkx==3.5
"""

NUMPY_2 = """\
ERROR: Cannot install opencv-python-headless==4.12.0.88 because these package versions have conflicting dependencies.

The conflict is caused by:
    opencv-python-headless 4.12.0.88 depends on numpy<2.3.0 and >=2; python_version >= "3.9"
    The user requested (constraint) numpy==1.26.4

To fix this you could try to:
"""


def test_a_version_without_a_wheel_names_the_nearest_one_that_has_one():
    message, reason = resolve._failure(NO_WHEEL, ["networkx==3.5"], PY310, {}, "model 'Graph'")
    assert reason == "networkx 3.5 (installed here) has no wheel for Python 3.10 on x86_64; networkx 3.4.2 has one"
    assert message.startswith("model 'Graph' needs networkx==3.5, which cannot ship for Python 3.10 on linux x86_64")
    assert "networkx 3.5 (the version installed where the build runs) has no wheel for Python 3.10" in message
    assert "The nearest version that has one is 3.4.2" in message and "pip install 'networkx==3.4.2'" in message
    assert "--triton-release" in message and "--provided networkx" in message


def test_a_distribution_needing_numpy_2_is_refused_naming_the_containers_numpy():
    message, reason = resolve._failure(NUMPY_2, ["opencv-python-headless==4.12.0.88"], PY310, {}, "model 'Cv'")
    assert reason is not None and reason.startswith("a distribution needs a numpy other than the container's 1.26.4")
    assert "needs a numpy that the container lacks" in message
    assert "opencv-python-headless 4.12.0.88 depends on numpy<2.3.0 and >=2" in message
    assert "the container provides numpy 1.26.4" in message


@pytest.mark.parametrize(
    ("version", "available", "nearest"),
    [("3.5", ["3.4.2", "3.4.1", "2.8.8"], "3.4.2"), ("1.0", ["1.2", "1.10", "2.0rc1"], "1.2"), ("2", [], None)],
)
def test_nearest_prefers_the_newest_older_release(version, available, nearest):
    assert resolve.nearest(version, available) == nearest


def test_every_manylinux_tag_up_to_the_containers_glibc_is_listed():
    targets = {t.tag: t for t in wheel_targets(resolve_targets(), ("x86_64", "aarch64"))}
    assert sorted(targets) == ["cp310-aarch64", "cp310-x86_64", "cp312-aarch64", "cp312-x86_64"]
    x86 = targets["cp310-x86_64"].platforms()
    assert x86[:3] == ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]
    assert "manylinux_2_35_x86_64" in x86 and "manylinux_2_36_x86_64" not in x86  # Ubuntu 22.04
    assert "manylinux_2_39_x86_64" in targets["cp312-x86_64"].platforms()  # Ubuntu 24.04
    assert targets["cp312-aarch64"].platforms()[0] == "manylinux2014_aarch64"
    assert not any(p.startswith("linux_") for t in targets.values() for p in t.platforms())


def test_what_the_container_provides_never_ships():
    options = PackageOptions(provided=("torch",))
    assert not options.ships("numpy") and not options.ships("cloudpickle") and not options.ships("Torch")
    assert options.ships("scikit_learn") and not PackageOptions(mode="record").ships("scikit-learn")


def test_a_distribution_installed_from_a_directory_cannot_ship(monkeypatch, tmp_path):
    from repogen.packages.packager import Packager

    monkeypatch.setattr(resolve, "local_origin", lambda name: "/home/me/mylib")
    packager = Packager(PackageOptions(), resolve_targets(), tmp_path)
    with pytest.raises(BuildError, match=r"installed from /home/me/mylib \(not from a package index\)"):
        packager.ship("model 'M'", {"mylib": "mylib==0.1"})


def test_a_namespace_several_distributions_share_records_the_one_that_holds_the_module(monkeypatch):
    from repogen.emit import requirements

    owners = {"protobuf": ["google/protobuf/message.py"], "google-auth": ["google/auth/__init__.py"]}
    monkeypatch.setattr(
        requirements, "_distributions", lambda: {"google": ["google-auth", "protobuf"], "yaml": ["PyYAML"]}
    )
    monkeypatch.setattr(requirements, "_files", lambda dist: frozenset(owners.get(dist, [])))
    monkeypatch.setattr(requirements.importlib.metadata, "version", lambda dist: {"PyYAML": "6.0.2"}.get(dist, "1.0"))
    found = requirements.third_party(["google", "google.protobuf", "google.protobuf.message", "yaml", "numpy"])
    assert found == {"google.protobuf": "protobuf==1.0", "yaml": "PyYAML==6.0.2"}  # not google-auth, sorted first
