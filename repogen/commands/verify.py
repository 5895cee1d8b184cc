"""``repogen verify``: does a repository still hold exactly the files its signatures list?"""

from __future__ import annotations

from pathlib import Path

import click

from ..signing import VerifyWith, verify_repository

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--key", type=_FILE, help="The public key (PEM) of the key that signed.")
@click.option("--certificate-chain", "chain", type=_FILE, multiple=True, help="Signed with a certificate: the "
              "root (and intermediate) certificates to check it against, each a PEM file. Repeatable.")  # fmt: skip
@click.option("--sigstore-identity", help="Signed keylessly: the identity (e-mail, workflow) that must have signed.")
@click.option("--sigstore-issuer", help="With --sigstore-identity: its OIDC issuer.")
@click.option("--staging", is_flag=True, help="With --sigstore-identity: Sigstore's staging instance (tests).")
def verify(
    repository: Path,
    key: Path | None,
    chain: tuple[Path, ...],
    sigstore_identity: str | None,
    sigstore_issuer: str | None,
    staging: bool,
) -> None:
    """Check REPOSITORY (or one model directory) against its OpenSSF Model Signing signatures.

    Exit 0 with one line when every file is covered and unchanged; otherwise exit 1 naming each
    changed, missing and added file, and each signature that is not valid for the key.
    """
    if sum(map(bool, (key, chain, sigstore_identity))) != 1:
        raise click.UsageError("expected one of --key PUB.pem, --certificate-chain CA.pem, --sigstore-identity ID")
    method = VerifyWith(key, chain, bool(chain), sigstore_identity, sigstore_issuer, staging)
    result = verify_repository(repository, method)
    result.raise_if_failed()
    click.echo(result.line())


COMMANDS = [verify]
