"""Signed repositories: repogen's signatures are OpenSSF Model Signing's, checked by both verifiers.

Three apps are built signed (``repogen build --sign-key``, a P-256 key made here): the quickstart, the
pipeline example (ensembles, BLS, decoupled) and an app shipping PyYAML. Untouched, each passes ``repogen
verify`` and upstream's ``model_signing verify key`` on the root and on every model directory alone. Each
tamper of ``repogen.testing.signing.TAMPERS`` is then applied to a copy: ``repogen verify`` exits 1 naming
the file, and upstream's CLI refuses it too. Also: ``--model-version N`` re-signs what it writes, a missing
signing extra is an error naming it before any work, a symlinked root verifies and a symlink inside is
refused, and ``repogen serve --verify-key`` serves a verified repository and refuses a tampered one before
the server starts.
"""

from __future__ import annotations

import builtins
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from serve_cli import ServeProcess, cli_env, repogen

from repogen.errors import SigningError
from repogen.runtime.contract import SIGNATURE_FILE
from repogen.signing import SignWith, VerifyWith, verify_repository
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.signing import TAMPERS, KeyPair, copy_repository, ec_key, upstream_verify

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APPS = {  # app -> (its file under the checkout, the model every tamper touches)
    "quickstart": ("examples/quickstart/app.py", "AddSub"),
    "pipeline": ("examples/pipeline/app.py", "Tokenize"),
    "packages": ("tests/apps/packages/yaml_only.py", "Yaml"),
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, KeyPair]:
    where = tmp_path_factory.mktemp("keys")
    return {"signer": ec_key(where, "signer"), "other": ec_key(where, "other", "secp384r1")}


def _build(app: str, output: Path, *extra: str) -> None:
    done = repogen("build", f"{app}:models", "-o", str(output), *extra, timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def signed(keys: dict[str, KeyPair], tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Per app: its signed build, and a newer build of it (one comment appended to the app file), unsigned."""
    built = {}
    for name, (app, _) in APPS.items():
        root = tmp_path_factory.mktemp(name)
        _build(app, root / "repo", "--sign-key", str(keys["signer"].private))
        source = ROOT / app
        changed = root / "newer-app"
        shutil.copytree(source.parent, changed, ignore=shutil.ignore_patterns("__pycache__"))
        with (changed / source.name).open("a", encoding="utf-8") as handle:
            handle.write("# a newer build\n")
        _build(str(changed / source.name), root / "newer")
        built[name] = (root / "repo", root / "newer")
    return built


@pytest.fixture(scope="module")
def other_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PyYAML for Python 3.10 at another version than the one installed here (and so shipped)."""
    import importlib.metadata

    version = "6.0.1" if importlib.metadata.version("PyYAML") == "6.0.2" else "6.0.2"
    where = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version",
           "3.10", "--platform", "manylinux2014_x86_64", "-d", str(where), f"PyYAML=={version}"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
    return next(where.glob("*.whl"))


@pytest.mark.parametrize("app", APPS)
def test_an_untouched_signed_build_passes_both_verifiers(app, signed, keys):
    repo, _ = signed[app]
    result = verify_repository(repo, VerifyWith(key=keys["signer"].public))
    assert result.ok, result.report()
    done = repogen("verify", str(repo), "--key", str(keys["signer"].public))
    assert done.returncode == 0 and done.stdout.startswith(f"Verified {repo}: all "), done.stdout + done.stderr
    models = sorted(p for p in repo.iterdir() if p.is_dir())
    for directory in [repo, *models]:  # the root, and every model directory as Triton or a bucket takes it alone
        assert (directory / SIGNATURE_FILE).is_file()
        upstream = upstream_verify(directory, keys["signer"].public)
        assert upstream.returncode == 0 and "Verification succeeded" in upstream.stdout, upstream.stderr
    assert repogen("verify", str(models[0]), "--key", str(keys["signer"].public)).returncode == 0


CASES = [(app, tamper) for app in APPS for tamper in TAMPERS if app == "packages" or not tamper.needs_packages]


@pytest.mark.parametrize(("app", "tamper"), CASES, ids=[f"{a}: {t.name}" for a, t in CASES])
def test_every_tamper_is_refused_by_both_verifiers(
    app, tamper, signed, keys, other_wheel, damaged_on_purpose, tmp_path
):
    repo, newer = signed[app]
    copy = copy_repository(repo, damaged_on_purpose(tmp_path / "repo"))
    context = {"other_key": keys["other"], "other_wheel": other_wheel, "newer": newer}
    named = tamper.apply(copy, APPS[app][1], context)
    ours = repogen("verify", str(copy), "--key", str(keys["signer"].public))
    assert ours.returncode == 1, ours.stdout
    assert f"{copy} does not verify" in ours.stderr and named in ours.stderr, ours.stderr
    upstream = upstream_verify(copy, keys["signer"].public)
    assert upstream.returncode == 1 and "Verification failed" in upstream.stderr, upstream.stdout + upstream.stderr


def test_a_version_build_re_signs_what_it_writes(keys, tmp_path):
    app, signer = f"{APPS['quickstart'][0]}:models", keys["signer"]
    _build(APPS["quickstart"][0], tmp_path / "repo", "--sign-key", str(signer.private))
    _build(APPS["quickstart"][0], tmp_path / "repo", "--model-version", "2", "--sign-key", str(signer.private))
    assert (tmp_path / "repo" / "AddSub" / "2" / "model.pkl").is_file()
    assert verify_repository(tmp_path / "repo", VerifyWith(key=signer.public)).ok
    assert upstream_verify(tmp_path / "repo", signer.public).returncode == 0
    assert upstream_verify(tmp_path / "repo" / "AddSub", signer.public).returncode == 0
    unsigned = repogen("build", app, "-o", str(tmp_path / "repo"), "--model-version", "3")
    assert unsigned.returncode == 0, unsigned.stderr
    assert "was signed and this build is not" in unsigned.stderr
    refused = repogen("verify", str(tmp_path / "repo"), "--key", str(signer.public))
    assert refused.returncode == 1 and "is not signed" in refused.stderr


def test_without_the_signing_extra_a_requested_signature_fails_naming_it(keys, tmp_path, monkeypatch):
    from repogen.build import build_app

    real_import = builtins.__import__

    def no_signing(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("model_signing"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_signing)
    with pytest.raises(SigningError, match=r"the 'signing' extra .* pip install 'triton-repogen\[signing\]'"):
        build_app(f"{ROOT / APPS['quickstart'][0]}:models", tmp_path / "repo", sign=SignWith(keys["signer"].private))
    assert not (tmp_path / "repo").exists()


def test_a_symlinked_root_verifies_and_a_symlink_inside_is_refused(signed, keys, tmp_path):
    repo, _ = signed["quickstart"]
    (tmp_path / "mnt-models").symlink_to(repo)  # KServe's /mnt/models can be a link
    assert verify_repository(tmp_path / "mnt-models", VerifyWith(key=keys["signer"].public)).ok
    copy = copy_repository(repo, tmp_path / "copy")
    (copy / "AddSub" / "1" / "extra.py").symlink_to(copy / "AddSub" / "1" / "model.py")
    refused = repogen("verify", str(copy), "--key", str(keys["signer"].public))
    assert refused.returncode == 1 and "AddSub/1/extra.py" in refused.stderr and "symlink" in refused.stderr


def test_serve_verifies_before_the_server_starts(signed, keys, triton_install, tmp_path):
    repo, _ = signed["quickstart"]
    copy = copy_repository(repo, tmp_path / "tampered")
    (copy / "AddSub" / "config.pbtxt").write_text((copy / "AddSub" / "config.pbtxt").read_text() + "\n")
    refused = ServeProcess(copy, triton_install, "--verify-key", str(keys["signer"].public), env=cli_env())
    assert refused.proc.wait(timeout=120) == 1
    output = "\n".join(refused.lines)
    assert "changed: AddSub/config.pbtxt" in output and "tritonserver" not in output.split("does not verify")[0]
    served = ServeProcess(repo, triton_install, "--verify-key", str(keys["signer"].public), env=cli_env())
    try:
        served.wait_for(r"^Verified .*: all \d+ files unchanged")
        served.wait_for(r"ready \(pid \d+\), serving 2 model\(s\)", timeout=300)
        server = SimpleNamespace(http_url=f"127.0.0.1:{served.http}", grpc_url=f"127.0.0.1:{served.grpc}")
        pair = np.array([[1.0, 2.0]], dtype=np.float32), np.array([[3.0, 4.0]], dtype=np.float32)
        for protocol in PROTOCOLS:
            answer = infer(protocol, server, "AddSub", {"a": pair[0], "b": pair[1]})
            assert answer["add"].tolist() == [[4.0, 6.0]]
    finally:
        served.stop()
    assert verify_repository(repo, VerifyWith(key=keys["signer"].public)).ok  # serving wrote nothing into it


def test_signed_builds_differ_only_in_their_signatures_and_diff_says_who_verifies(signed, keys, tmp_path):
    repo, _ = signed["quickstart"]
    _build(APPS["quickstart"][0], tmp_path / "again", "--sign-key", str(keys["signer"].private))
    assert (repo / SIGNATURE_FILE).read_bytes() != (tmp_path / "again" / SIGNATURE_FILE).read_bytes()  # ECDSA
    same = repogen("diff", str(repo), str(tmp_path / "again"))
    assert same.returncode == 0 and "are identical\n" in same.stdout, same.stdout + same.stderr
    assert f"ACTUAL {tmp_path / 'again'}: signed (3 signatures, not checked" in same.stdout
    _build(APPS["quickstart"][0], tmp_path / "unsigned")
    checked = repogen("diff", str(repo), str(tmp_path / "unsigned"), "--verify-key", str(keys["signer"].public))
    assert checked.returncode == 1 and "are identical" in checked.stdout  # the same files, one side not signed
    assert f"EXPECTED {repo}: signed, verifies against key" in checked.stdout
    assert f"ACTUAL {tmp_path / 'unsigned'}: not signed" in checked.stdout


def test_what_upstream_signs_repogen_verifies(signed, keys, tmp_path):
    """A root signature made by upstream's own CLI covers the model directories: repogen verify accepts it."""
    repo, _ = signed["quickstart"]
    copy = copy_repository(repo, tmp_path / "repo")
    for signature in copy.glob(f"**/{SIGNATURE_FILE}"):
        signature.unlink()
    cmd = [sys.executable, "-m", "model_signing", "sign", "key", str(copy), "--signature", str(copy / SIGNATURE_FILE),
           "--private_key", str(keys["signer"].private)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    result = verify_repository(copy, VerifyWith(key=keys["signer"].public))
    assert result.ok and result.units == ("",), result.report()
    (copy / "AddSub" / "1" / "model.py").write_text("# changed\n")
    assert [f.path for f in verify_repository(copy, VerifyWith(key=keys["signer"].public)).findings] == [
        "AddSub/1/model.py"
    ]
    ours = copy_repository(repo, tmp_path / "ours")
    (ours / "AddSub" / SIGNATURE_FILE).unlink()  # the root's statement lists it
    refused = verify_repository(ours, VerifyWith(key=keys["signer"].public))
    assert [(f.kind, f.path) for f in refused.findings] == [("missing", "AddSub/model.sig")]
