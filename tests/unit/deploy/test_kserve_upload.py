"""`repogen deploy --kserve` says how to upload the repository, and what each way stores.

KServe's storage initializer copies a directory file by file (every hard link a copy) and unpacks one
``.tar`` with its links; the manifest's header gives both sizes and the ``tar`` command. The tar size
is computed as GNU tar writes it, checked here against ``tar`` itself on long names and hard links.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from repogen.build import build_app
from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import KSERVE_FILE
from repogen.deploy.kserve import stored_sizes

ROOT = Path(__file__).resolve().parents[3]


def test_the_tar_size_is_gnu_tars_and_a_file_by_file_copy_counts_every_link(tmp_path):
    tree = tmp_path / "repo"
    deep = tree / "M" / "1" / "packages" / ("x" * 60) / ("y" * 30)
    deep.mkdir(parents=True)
    (deep / "a.py").write_bytes(b"a" * 1000)
    (deep / "b").write_bytes(b"")  # an empty file
    (tree / "M" / "config.pbtxt").write_bytes(b"name: 'M'\n")
    for index in range(3):  # hard links, one of them under a name over 100 bytes
        other = tree / f"N{index}" / "1" / ("z" * (40 * index))
        other.mkdir(parents=True)
        os.link(deep / "a.py", other / "a.py")
    name = tree / "M" / "1" / ("n" * 99)  # a name of exactly 100 bytes fits GNU's field
    name.mkdir()
    subprocess.run(["tar", "-C", str(tree), "-cf", str(tmp_path / "repo.tar"), "."], check=True)
    every, tar = stored_sizes(tree)
    assert tar == (tmp_path / "repo.tar").stat().st_size
    assert every == 4 * 1000 + len(b"name: 'M'\n")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("upload") / "model_repository"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), out)
    return out


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("s3://bucket/models/qs", "# Upload: KServe copies s3://bucket/models/qs file by file: every hard link "
         "becomes a copy ({every}), modes and symlinks go, S3 and Azure skip empty files; the repository loads "
         "after such a copy."
         "\n# One .tar keeps the links ({tar}): tar -C model_repository -cf qs.tar ., copy it to "
         "s3://bucket/models/qs.tar and pass that as --storage-uri.\n"),
        ("gs://bucket/qs.tar", "# Upload: one archive, which KServe's storage initializer unpacks; a .tar keeps the "
         "hard links ({tar}; a .zip drops exec bits): tar -C model_repository -cf qs.tar ., then copy it to "
         "gs://bucket/qs.tar.\n"),
        (None, "# Upload: copy model_repository/ onto the PersistentVolumeClaim with its links and modes (cp -a, or tar"
         " -C model_repository -cf model-repository.tar . and untar it there): {tar}. KServe mounts it as it is.\n"),
    ],
)  # fmt: skip
def test_the_manifest_says_how_to_upload(repo, uri, said):
    every, tar = stored_sizes(repo)
    text = generate(repo, DeployOptions(kserve=True, storage_uri=uri)).files[KSERVE_FILE]
    expected = said.format(every=f"{every / 1e6:.1f} MB", tar=f"{tar / 1e6:.1f} MB")
    assert expected in text and text.index(expected) < text.index("apiVersion:")


def test_an_image_needs_no_upload(repo):
    assert "Upload" not in generate(repo, DeployOptions(kserve=True, image="reg/qs:1")).files[KSERVE_FILE]
