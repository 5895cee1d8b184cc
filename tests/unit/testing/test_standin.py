"""Which stand-in image (repogen.testing.standin) serves which NGC release, and how it is tagged."""

from __future__ import annotations

import pytest

from repogen.testing.standin import STANDINS, standin_for
from repogen.triton.releases import RELEASES, get_release


def test_tags_say_what_is_inside():
    assert [s.tag for s in STANDINS] == [
        "repogen-standin/tritonserver:23.10-py3",
        "repogen-standin/tritonserver:24.10-py3",
        "repogen-standin/tritonserver:24.10-py3.12",  # 24.10's tritonserver, Python 3.12: no release is that
    ]
    for standin in STANDINS:
        assert standin.release.wheel is not None and standin.python in standin.release.stub_pythons


@pytest.mark.parametrize("key", ["24.10", "r24.10", "2.51.0", "nvcr.io/nvidia/tritonserver:24.10-py3", "24.10-py3"])
def test_a_release_with_its_own_standin_gets_it(key):
    assert standin_for(key).tag == "repogen-standin/tritonserver:24.10-py3"


def test_every_python_312_release_gets_the_312_standin():
    later = [r for r in RELEASES if r.python == "3.12"]
    assert later and {standin_for(r).tag for r in later} == {"repogen-standin/tritonserver:24.10-py3.12"}
    assert standin_for("24.10-py3.12").python == "3.12"
    assert standin_for("repogen-standin/tritonserver:24.10-py3.12").python == "3.12"


def test_a_release_without_a_standin_is_named_with_those_there_are():
    with pytest.raises(LookupError, match=r"no stand-in image for tritonserver 2\.41\.0 \(NGC 23\.12\).*23\.10-py3"):
        standin_for(get_release("23.12"))
