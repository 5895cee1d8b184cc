"""What the serving Pythons accept: grammar and standard library, checked at build time.

The server compiles shipped sources with its own Python, so a construct newer than that Python,
or a standard-library module it no longer (or not yet) ships, would fail only when the model
loads. ``ast.parse(feature_version=...)`` catches most newer grammar; it misses PEP 701 f-strings
and PEP 646 star-subscripts, and reports some constructs on the wrong line, so the constructs
added since 3.10 are found in the syntax tree first and the parser is only the fallback.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import token
import tokenize
from collections.abc import Iterable, Iterator

from ..errors import BuildError
from ..pickling.shipped_sources import SourceFile
from ..triton.targets import Targets, python_key

# Top-level stdlib modules that differ between CPython 3.10 and 3.13 (read off
# sys.stdlib_module_names of each), as module -> (first Python with it, first Python without it).
STDLIB_CHANGES: dict[str, tuple[str | None, str | None]] = {
    "tomllib": ("3.11", None),
    "binhex": (None, "3.11"),
    **dict.fromkeys(("asynchat", "asyncore", "distutils", "imp", "smtpd"), (None, "3.12")),
    **dict.fromkeys(
        (
            "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "lib2to3", "mailcap", "msilib", "nis",
            "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib",
        ),
        (None, "3.13"),
    ),
}  # fmt: skip

_NEEDS = re.compile(r"Python 3\.(\d+) and greater")


def is_stdlib(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in STDLIB_CHANGES


def stdlib_missing(module: str, python: str) -> str | None:
    """Why ``python``'s standard library lacks ``module`` (None when it has it)."""
    added, removed = STDLIB_CHANGES.get(module.split(".")[0], (None, None))
    if added and python_key(python) < python_key(added):
        return f"added in Python {added}"
    if removed and python_key(python) >= python_key(removed):
        return f"removed in Python {removed}"
    return None


def check_stdlib(modules: Iterable[str], targets: Targets, what: str) -> None:
    for module in sorted(modules):
        for python in targets.pythons:
            why = stdlib_missing(module, python)
            if why:
                raise BuildError(
                    f"{what} uses the standard-library module '{module.split('.')[0]}' ({why}), which "
                    f"{targets.describe(python)} cannot import. Use another module, or build with --triton-release "
                    "for the one container you deploy to if its Python has it"
                )


def check_grammar(source: SourceFile, targets: Targets) -> None:
    """Every shipped source must compile under each target Python; refuse it at build time, naming the line."""
    builder = "{}.{}".format(*sys.version_info[:2])
    for python in targets.pythons:
        if python_key(python) >= python_key(builder):
            continue  # newer grammars accept what this one parsed
        problem = _grammar_problem(source.data, python_key(python))
        if problem is not None:
            line, message, needs = problem
            raise BuildError(_grammar_message(source, line, message, needs, python, targets))


def _grammar_message(source: SourceFile, line: int, message: str, needs: str, python: str, targets: Targets) -> str:
    oldest = targets.oldest_with(needs)
    where = f"NGC {oldest.ngc} (tritonserver {oldest.tritonserver})" if oldest else f"a release with Python {needs}"
    return (
        f"{source.origin}:{line}: {message}; this needs Python {needs}, but {targets.describe(python)} compiles the "
        f"shipped source. The oldest release that can serve it is {where}. Rewrite it for Python {python}, or build "
        f"with --triton-release {oldest.ngc if oldest else '<release>'} (or newer) if you deploy only there"
    )


def _grammar_problem(data: bytes, python: tuple[int, int]) -> tuple[int, str, str] | None:
    """(line, what, the Python it needs) for the first construct ``python`` cannot compile."""
    found = [p for p in _newer_constructs(ast.parse(data)) if python_key(p[2]) > python]
    if python < (3, 12) and sys.version_info >= (3, 12):
        found += [(line, what, "3.12") for line, what in _pep701_fstrings(data)]
    if found:
        return min(found)
    try:  # what this table does not know yet; the parser's line is not always the construct's
        ast.parse(data, feature_version=python)
    except SyntaxError as exc:
        match = _NEEDS.search(exc.msg or "")
        return (
            exc.lineno or 0,
            exc.msg or "syntax error",
            f"3.{match[1]}" if match else "{}.{}".format(*sys.version_info[:2]),
        )
    return None


def _newer_constructs(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """Grammar added after Python 3.10: (line, what, the Python that added it)."""
    for node in ast.walk(tree):
        if type(node).__name__ == "TryStar":
            yield node.handlers[0].lineno, "an except* clause (exception groups)", "3.11"  # type: ignore[attr-defined]
        elif type(node).__name__ == "TypeAlias":
            yield node.lineno, "a type statement", "3.12"  # type: ignore[attr-defined]
        elif getattr(node, "type_params", None):
            yield node.lineno, "a type parameter list", "3.12"  # type: ignore[attr-defined]
        elif getattr(node, "default_value", None) is not None:
            yield node.lineno, "a type parameter default", "3.13"  # type: ignore[attr-defined]
        elif isinstance(node, ast.Subscript):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(isinstance(item, ast.Starred) for item in items):
                yield node.lineno, "a starred expression in a subscript (x[*a])", "3.11"
        elif isinstance(node, ast.arguments) and node.vararg and isinstance(node.vararg.annotation, ast.Starred):
            yield node.vararg.lineno, "a starred annotation on *args", "3.11"


def _pep701_fstrings(data: bytes) -> Iterator[tuple[int, str]]:
    """PEP 701 (Python 3.12): what an f-string's replacement fields could not hold before."""
    quotes: list[str] = []  # the quote of each f-string we are inside, innermost last
    fstring_start = getattr(token, "FSTRING_START", -1)
    fstring_end = getattr(token, "FSTRING_END", -1)
    fstring_middle = getattr(token, "FSTRING_MIDDLE", -1)
    for tok in tokenize.tokenize(io.BytesIO(data).readline):
        if tok.type in (fstring_start, token.STRING) and quotes:
            quote = tok.string.lstrip("rRbBfFuU")[:3]
            quote = quote if quote in ('"""', "'''") else quote[:1]
            outer = quotes[-1]
            if quote.startswith(outer[0]) and (len(outer) == 1 or quote == outer):
                yield tok.start[0], f"a nested string reuses the f-string's quote {outer}"
            if tok.type == token.STRING and "\\" in tok.string:
                yield tok.start[0], "a backslash inside an f-string's replacement field"
        if tok.type == fstring_start:
            prefix_free = tok.string.lstrip("rRbBfFuU")
            quotes.append(prefix_free if prefix_free in ('"""', "'''") else prefix_free[:1])
        elif tok.type == fstring_end:
            quotes.pop()
        elif quotes and tok.type != fstring_middle:
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], "a comment inside an f-string's replacement field"
            elif tok.type in (tokenize.NL, token.NEWLINE) and len(quotes[-1]) == 1:
                yield tok.start[0], "a line break inside a single-quoted f-string's replacement field"
