"""``repogen infer --timeout`` is refused over HTTP before anything is sent."""

from __future__ import annotations

import pytest

from repogen.errors import UsageError
from repogen.server.client.infer import run_infer


def test_timeout_over_http_is_refused_with_the_fix():
    with pytest.raises(UsageError) as caught:
        run_infer("Tokens", ["n=3"], url="127.0.0.1:1", protocol="http", timeout=0.5)
    assert str(caught.value) == (
        "--timeout needs gRPC, whose deadline cancels the request on the server; drop --protocol http."
    )
