"""repogen sign / verify at the command line: usage errors exit 2, unusable keys and a missing extra exit 1, named.

The signatures themselves, both verifiers and the tamper matrix: tests/integration/test_signing.py.
"""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.testing.signing import KeyPair, ec_key

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-signing") / "repo"
    build_app(f"{ROOT / 'examples/quickstart/app.py'}:models", out)
    return out


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return ec_key(tmp_path_factory.mktemp("key"), "signer", "secp521r1")


def invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def test_sign_then_verify_and_usage_errors(repo: Path, key: KeyPair) -> None:
    assert invoke("verify", repo, "--key", key.public)[0] == 1  # not signed yet
    code, out = invoke("sign", repo, "--key", key.private)
    assert code == 0 and out == f"Signed {repo}: the repository and 2 model directories, with key {key.private}\n"
    code, out = invoke("verify", repo, "--key", key.public)
    assert code == 0 and out.startswith(f"Verified {repo}: all ") and out.count("\n") == 1
    code, out = invoke("verify", repo / "Shout", "--key", key.public)
    assert code == 0 and "covered by its signature (one model directory)" in out
    assert invoke("sign", repo)[0] == 2 and "expected one of --key" in invoke("sign", repo)[1]
    assert invoke("sign", repo, "--key", key.private, "--sigstore")[0] == 2
    assert invoke("verify", repo)[0] == 2


def test_an_unusable_key_is_named(repo: Path, key: KeyPair, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    rsa_key = tmp_path / "rsa.pem"
    rsa_key.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    code, out = invoke("sign", repo, "--key", rsa_key)
    assert (
        code == 1 and f"Error: cannot sign {repo}" in out and "an EC private key in PEM (P-256, P-384 or P-521)" in out
    )
    code, out = invoke("verify", repo, "--key", key.private)  # a private key where the public one goes
    assert code == 1 and f"public key {key.private} cannot be used" in out


def test_without_the_extra_every_signing_command_names_it(repo: Path, key: KeyPair, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_signing(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith(("model_signing", "OpenSSL")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_signing)
    for args in (("sign", repo, "--key", key.private), ("verify", repo, "--key", key.public)):
        code, out = invoke(*args)
        assert code == 1 and "pip install 'triton-repogen[signing]'" in out, out
