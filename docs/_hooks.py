"""MkDocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

repogen's docstrings name other objects with Sphinx roles (``:class:`BuildOptions```), which the API reference
would otherwise print as they are, colon and role name included; they are shown as code, the way Sphinx shows
them (``~`` keeps the last part of the dotted name).
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):<code>(~?)\.?([\w.]+)</code>")


def _shown(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(_shown, html)
