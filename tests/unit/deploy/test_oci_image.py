"""repogen image: a repository as a reproducible OCI image, refused before anything is written when it fails checks.

The shell here is a made-up static ELF that says it is BusyBox (the layout is what is checked); the real BusyBox
runs as KServe's modelcar in tests/containers/test_modelcar.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.deploy.images import ImageOptions, image_archive
from repogen.deploy.oci_image import MODELCAR_COMMAND
from repogen.deploy.oci_shell import find_shell
from repogen.errors import DeployError, VerificationError
from repogen.signing import SignWith
from repogen.testing.signing import KeyPair, ec_key

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = str(ROOT / "examples/quickstart/app.py:models")


def fake_busybox(path: Path, machine: int = 62, interpreter: bool = False) -> Path:
    """A 64-bit little-endian ELF header (one program header: PT_LOAD, or PT_INTERP) and BusyBox's banner."""
    header = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 64, 0, 0, 64, 56, 1,
                                                              0, 0, 0)  # fmt: skip
    program = struct.pack("<IIQQQQQQ", 3 if interpreter else 1, 5, 0, 0, 0, 0, 0, 0)
    path.write_bytes(header + program + b"BusyBox v1.35.0 (made up for a test)\n" + os.urandom(0) + bytes(4000))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_busybox(tmp_path_factory.mktemp("shell") / "busybox")


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quickstart") / "model_repository"
    build_app(QUICKSTART, out)
    return out


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def layers(archive: Path) -> tuple[dict, dict, list[tarfile.TarInfo], list[tarfile.TarInfo]]:
    """(manifest, config, the shell layer's members, the /models layer's members)."""
    blobs = members(archive)
    index = json.loads(blobs["index.json"])
    manifest = json.loads(blobs[f"blobs/sha256/{index['manifests'][0]['digest'][7:]}"])
    config = json.loads(blobs[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    found = []
    for layer in manifest["layers"]:
        data = blobs[f"blobs/sha256/{layer['digest'][7:]}"]
        path = archive.parent / f"layer-{layer['digest'][7:19]}.tar.gz"
        path.write_bytes(data)
        with tarfile.open(path) as tar:
            found.append(tar.getmembers())
    return manifest, config, found[0], found[1]


def test_one_repository_one_digest_whatever_the_umask_the_directory_or_its_links(repository, shell, tmp_path):
    first, _ = image_archive(repository, tmp_path / "a.oci.tar", ImageOptions(shell=shell))
    copy = tmp_path / "elsewhere" / "renamed"
    old = os.umask(0o077)
    try:
        shutil.copytree(repository, copy)
        for path in copy.rglob("*"):  # as a build under umask 077 leaves them
            path.chmod(0o700 if path.is_dir() else 0o600)
        model_py = copy / "AddSub" / "1" / "model.py"
        twin = copy / "Shout" / "1" / "model.py"
        if model_py.read_bytes() == twin.read_bytes():  # a hard link stores the same bytes as a copy does
            twin.unlink()
            os.link(model_py, twin)
        second, _ = image_archive(copy, tmp_path / "b.oci.tar", ImageOptions(shell=shell))
    finally:
        os.umask(old)
    assert (copy / "AddSub" / "config.pbtxt").stat().st_mode & 0o077 == 0
    assert first.digest == second.digest
    assert (tmp_path / "a.oci.tar").read_bytes() == (tmp_path / "b.oci.tar").read_bytes()


def test_entries_are_sorted_plain_owned_by_root_at_time_zero(repository, shell, tmp_path):
    image_archive(repository, tmp_path / "a.oci.tar", ImageOptions(shell=shell))
    _, config, shell_layer, models = layers(tmp_path / "a.oci.tar")
    assert [m.name for m in shell_layer] == ["bin", "bin/sh"]
    names = [m.name for m in models]
    assert names[0] == "models" and all(n.startswith("models/") for n in names[1:])
    assert names == sorted(names, key=lambda n: n.split("/"))
    for member in shell_layer + models:
        assert (member.uid, member.gid, member.uname, member.gname, member.mtime) == (0, 0, "", "", 0)
        assert member.isdir() or member.isreg(), member.name
        assert member.mode == (0o755 if member.isdir() or member.name == "bin/sh" else 0o644), member.name
    on_disk = sorted(str(p.relative_to(repository)) for p in repository.rglob("*") if p.is_file())
    assert sorted(n.removeprefix("models/") for n in names if not [m for m in models if m.name == n][0].isdir()) == (
        on_disk
    )
    assert config["config"]["Cmd"] == list(MODELCAR_COMMAND) and "Entrypoint" not in config["config"]
    assert config["config"]["Env"] == ["PATH=/bin"] and config["architecture"] == "amd64"


def test_annotations_say_what_it_is_and_what_it_was_made_from(repository, shell, tmp_path):
    made, _ = image_archive(repository, tmp_path / "a.oci.tar", ImageOptions(shell=shell, version="1.2.0"))
    manifest, config, _, _ = layers(tmp_path / "a.oci.tar")
    notes = manifest["annotations"]
    assert notes == config["config"]["Labels"] == made.annotations
    assert notes["org.opencontainers.image.title"] == "AddSub, Shout"
    assert notes["org.opencontainers.image.version"] == "1.2.0"
    assert notes["org.containers.type"] == "ai.image.model.car"
    assert notes["dev.repogen.repository.digest"] == config["rootfs"]["diff_ids"][1]
    assert "dev.repogen.version" in notes and "org.opencontainers.image.created" not in notes  # no dates


def test_every_blob_is_named_by_its_digest_and_the_size_stays_within_the_repositorys(repository, shell, tmp_path):
    made, _ = image_archive(repository, tmp_path / "a.oci.tar", ImageOptions(shell=shell))
    for name, data in members(tmp_path / "a.oci.tar").items():
        if name.startswith("blobs/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    files = sum(p.stat().st_size for p in repository.rglob("*") if p.is_file())
    assert made.size <= 1.01 * (files + shell.stat().st_size)


def test_a_tampered_repository_is_refused_before_anything_is_written(repository, shell, tmp_path):
    copy = tmp_path / "model_repository"
    shutil.copytree(repository, copy)
    with open(copy / "AddSub" / "1" / "model.py", "a") as source:
        source.write("# changed after the build\n")
    with pytest.raises(DeployError, match=r"fails `repogen validate`.*\n.*AddSub/1/model\.py.*changed after") as err:
        image_archive(copy, tmp_path / "a.oci.tar", ImageOptions(shell=shell))
    assert "no image was written or pushed" in str(err.value)
    assert os.listdir(tmp_path) == ["model_repository"]


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, KeyPair]:
    key = ec_key(tmp_path_factory.mktemp("key"))
    out = tmp_path_factory.mktemp("signed") / "model_repository"
    build_app(QUICKSTART, out, sign=SignWith(key=key.private))
    return out, key


def test_a_signed_repository_needs_its_key_and_must_verify(signed, repository, shell, tmp_path):
    repo, key = signed
    with pytest.raises(DeployError, match="is signed.*Pass --verify-key PUB.pem"):
        image_archive(repo, tmp_path / "a.oci.tar", ImageOptions(shell=shell))
    _, said = image_archive(repo, tmp_path / "a.oci.tar", ImageOptions(shell=shell, verify_key=key.public))
    assert said == f"signatures verified against {key.public}"
    with pytest.raises(VerificationError, match="is not signed"):
        image_archive(repository, tmp_path / "b.oci.tar", ImageOptions(shell=shell, verify_key=key.public))
    (tmp_path / "other").mkdir()
    other = ec_key(tmp_path / "other")
    with pytest.raises(VerificationError, match="does not verify"):
        image_archive(repo, tmp_path / "b.oci.tar", ImageOptions(shell=shell, verify_key=other.public))
    assert not (tmp_path / "b.oci.tar").exists()


def test_a_symlink_is_refused_naming_it(repository, shell, tmp_path):
    copy = tmp_path / "model_repository"
    shutil.copytree(repository, copy)
    moved = (copy / "AddSub" / "1" / "model.py").rename(tmp_path / "model.py")
    (copy / "AddSub" / "1" / "model.py").symlink_to(moved)  # the same bytes: `repogen validate` passes
    with pytest.raises(DeployError, match=r"AddSub/1/model\.py is a symbolic link"):
        image_archive(copy, tmp_path / "a.oci.tar", ImageOptions(shell=shell))


def test_the_shell_must_be_a_static_busybox(tmp_path):
    with pytest.raises(DeployError, match="dynamically linked.*apt-get install busybox-static"):
        find_shell(fake_busybox(tmp_path / "dynamic", interpreter=True))
    (tmp_path / "script").write_text("#!/bin/sh\n")
    with pytest.raises(DeployError, match="not a 64-bit little-endian ELF"):
        find_shell(tmp_path / "script")
    assert find_shell(fake_busybox(tmp_path / "arm", machine=183)).architecture == "arm64"


def test_the_command_prints_the_digest(repository, shell, tmp_path):
    result = CliRunner().invoke(cli, ["image", str(repository), "--shell", str(shell), "-o", str(tmp_path / "x.tar")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Wrote {tmp_path / 'x.tar'}: sha256:") and "(not signed)" in result.output
