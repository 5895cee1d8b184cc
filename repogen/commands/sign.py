"""``repogen sign``: OpenSSF Model Signing signatures for an existing repository, in place."""

from __future__ import annotations

from pathlib import Path

import click

from ..signing import SignWith, sign_repository
from ..signing.oms import KEY_HELP

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--key", type=_FILE, help=f"The private key to sign with: {KEY_HELP}.")
@click.option("--password", envvar="REPOGEN_SIGN_PASSWORD", help="The key's password ($REPOGEN_SIGN_PASSWORD).")
@click.option("--certificate", type=_FILE, help="Sign with --key and this signing certificate (PEM) of it.")
@click.option("--certificate-chain", "chain", type=_FILE, multiple=True, help="With --certificate: the "
              "certificates up to the root, each a PEM file. Repeatable.")  # fmt: skip
@click.option("--sigstore", is_flag=True, help="Keyless: Sigstore signs with your OIDC identity (a browser login, "
              "or --identity-token) and logs the signature in Rekor; needs the network.")  # fmt: skip
@click.option("--identity-token", envvar="REPOGEN_SIGSTORE_TOKEN", help="With --sigstore: an OIDC token to sign as.")
@click.option("--staging", is_flag=True, help="With --sigstore: Sigstore's staging instance (tests).")
def sign(
    repository: Path,
    key: Path | None,
    password: str | None,
    certificate: Path | None,
    chain: tuple[Path, ...],
    sigstore: bool,
    identity_token: str | None,
    staging: bool,
) -> None:
    """Sign REPOSITORY (or one model directory) with OpenSSF Model Signing, in place.

    Writes model.sig in each model directory and one at the root over everything (the model
    signatures too); each is a Sigstore bundle that `model_signing verify` accepts.
    """
    if sigstore == (key is not None):
        raise click.UsageError("expected one of --key KEY.pem (an EC key, offline) or --sigstore (keyless)")
    if certificate is None and chain:
        raise click.UsageError("--certificate-chain goes with --certificate")
    method = SignWith(key, password, certificate, chain, sigstore, identity_token, staging)
    signed = sign_repository(repository, method)
    units = f"the repository and {len(signed)} model directories" if signed else "the model directory"
    click.echo(f"Signed {repository}: {units}, with {method.describe()}")


COMMANDS = [sign]
