"""repogen push: what it refuses before a byte is sent (a bad reference, a refused repository, no registry there).

Pushing to a real registry, pulling with Docker and serving the pulled image: tests/containers/test_modelcar.py.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_oci_image import fake_busybox

from repogen.build import build_app
from repogen.cli import cli
from repogen.deploy.images import ImageOptions
from repogen.deploy.registry import PushOptions, Reference, push_repository
from repogen.errors import DeployError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quickstart") / "model_repository"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), out)
    return out


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:5000/quickstart:1", Reference("localhost:5000", "quickstart", "1")),
        ("ghcr.io/me/models/quickstart:1.0-rc1", Reference("ghcr.io", "me/models/quickstart", "1.0-rc1")),
        ("docker.io/me/quickstart:1", Reference("registry-1.docker.io", "me/quickstart", "1")),
    ],
)
def test_references_name_their_registry(text: str, expected: Reference) -> None:
    assert Reference.parse(text) == expected


@pytest.mark.parametrize("text", ["quickstart:1", "me/quickstart:1", "localhost:5000/QuickStart:1", "ghcr.io/me/q"])
def test_a_reference_without_registry_or_tag_is_refused(text: str) -> None:
    with pytest.raises(DeployError, match=r"is not REGISTRY/NAME:TAG.*localhost:5000/quickstart:1"):
        Reference.parse(text)


def test_an_unreachable_registry_is_named_with_the_fix(repository: Path, tmp_path: Path) -> None:
    shell = fake_busybox(tmp_path / "busybox")
    target = f"127.0.0.1:{closed_port()}/quickstart:1"
    with pytest.raises(DeployError, match=rf"registry 127\.0\.0\.1:\d+ is unreachable \(http://.*{target}.*check the"):
        push_repository(repository, target, PushOptions(ImageOptions(shell=shell), insecure=True))


def test_a_tampered_repository_is_refused_before_the_registry_is_asked(repository: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model_repository"
    shutil.copytree(repository, copy)
    (copy / "Shout" / "config.pbtxt").write_text((copy / "Shout" / "config.pbtxt").read_text() + "\n")
    result = CliRunner().invoke(cli, ["push", str(copy), f"127.0.0.1:{closed_port()}/quickstart:1", "--insecure",
                                      "--shell", str(fake_busybox(tmp_path / "busybox"))])  # fmt: skip
    assert result.exit_code == 1
    assert "fails `repogen validate`" in result.output and "Shout/config.pbtxt" in result.output
    assert "unreachable" not in result.output
