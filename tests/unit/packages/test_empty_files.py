"""A repository survives copies that skip zero-byte files (KServe's S3 and Azure downloads, since 0.17).

A shipped package tree holds hundreds of empty files (372 in tests/apps/packages: 370 ``__init__.py``
and the like, 2 ``py.typed``). Copied without them, the runtime refused every model with packages
("refusing the packages ... missing: joblib/externals/__init__.py"). Now the wheel cache writes a
comment into every empty Python source, and the runtime accepts a missing file that the build's
listing records as empty (tests/containers/test_kserve.py serves such copies).
"""

from __future__ import annotations

import hashlib
import json
import zipfile

from repogen.packages.wheels import EMPTY_SOURCE, unpack
from repogen.runtime.contract.package_trees import EMPTY_SHA256, LISTING_SUFFIX, digest_of, tree_differences, tree_files


def test_the_wheel_cache_gives_every_empty_source_a_comment_and_leaves_empty_data_files(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/__init__.py", b"")
        archive.writestr("demo/stubs.pyi", b"")
        archive.writestr("demo/py.typed", b"")
        archive.writestr("demo/core.py", b"X = 1\n")
    root, index = unpack(wheel, "0" * 64, tmp_path / "cache", "demo")
    assert (root / "demo" / "__init__.py").read_bytes() == EMPTY_SOURCE == (root / "demo" / "stubs.pyi").read_bytes()
    assert (root / "demo" / "py.typed").read_bytes() == b"" and (root / "demo" / "core.py").read_bytes() == b"X = 1\n"
    assert compile(EMPTY_SOURCE, "__init__.py", "exec").co_code == compile(b"", "__init__.py", "exec").co_code
    assert {relative for relative, (_, size, _) in index.items() if size == 0} == {"demo/py.typed"}


def _tree(tmp_path):
    root = tmp_path / "packages" / "cp310-x86_64"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "__init__.py").write_bytes(EMPTY_SOURCE)
    (root / "demo" / "py.typed").write_bytes(b"")
    (root / "demo" / "core.py").write_bytes(b"X = 1\n")
    listing = tree_files(str(root))
    (tmp_path / "packages" / f"cp310-x86_64{LISTING_SUFFIX}").write_text(json.dumps(listing))
    return root, digest_of(listing.items())


def test_a_missing_file_the_build_recorded_as_empty_is_what_it_was(tmp_path):
    root, digest = _tree(tmp_path)
    (root / "demo" / "py.typed").unlink()  # an S3 download skipped it
    assert tree_differences(str(root), digest)[1] is None


def test_any_other_difference_is_still_refused(tmp_path):
    root, digest = _tree(tmp_path)
    (root / "demo" / "py.typed").unlink()
    (root / "demo" / "core.py").unlink()
    assert tree_differences(str(root), digest)[1] == {"changed": [], "missing": ["demo/core.py", "demo/py.typed"],
                                                      "added": []}  # fmt: skip
    root, digest = _tree(tmp_path / "again")
    (root / "demo" / "py.typed").write_bytes(b"x")  # an empty file given content is a change
    assert tree_differences(str(root), digest)[1]["changed"] == ["demo/py.typed"]
    assert hashlib.sha256(b"").hexdigest() == EMPTY_SHA256
