"""The commands the README and the documentation pages show are commands that exist, as they are spelt.

Every ``repogen ...`` in a shell block or an inline code span must name a command of the CLI and only
options that command has (what follows a bare ``--`` goes to tritonserver or perf_analyzer); every
``make ...`` in a shell block a target of the Makefile. The README's ``docker run`` line must run the image
``repogen deploy`` defaults to, with the ``/dev/shm`` size ``repogen deploy`` computes for the quickstart and
the flags tests/containers/test_standins.py serves it with.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from repogen.cli import cli
from repogen.ondisk.reader import read_repository
from repogen.triton.releases import IMAGE_REPOSITORY, NEWEST
from repogen.triton.shm import shm_size_bytes

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`(repogen [^`]+)`")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
PASSTHROUGH = re.compile(r"(?:^|\s)\[?--(?=\s|\]|$)")  # a bare `--`: what follows is another program's


def _shell_lines(text: str) -> list[str]:
    """Each command line of the page's shell blocks, continuation lines joined and comments dropped."""
    lines = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            lines.append(line.removeprefix("$ "))
    return lines


def _uses() -> list[tuple[str, str]]:
    """(page, the text of one `repogen ...` use): shell segments and inline code spans."""
    uses = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        where = str(page.relative_to(ROOT))
        for line in _shell_lines(text):
            for segment in re.split(r"&&|\|\||;|\s\|\s(?!-)", line):  # not DIR|APP, [--json | --sbom]
                if segment.strip().startswith("repogen "):
                    uses.append((where, segment.strip()))
        prose = FENCED.sub("", text)
        uses += [(where, span) for span in INLINE.findall(prose)]
    return uses


USES = sorted(set(_uses()))


def _options(command: click.Command) -> set[str]:
    return {name for param in command.params for name in (*param.opts, *param.secondary_opts)}


def test_the_pages_show_repogen_commands():
    assert len({use for _, use in USES}) >= 60
    assert {page for page, _ in USES} >= {"README.md", "docs/cli.md", "docs/deployment.md"}


@pytest.mark.parametrize(("page", "use"), USES, ids=[f"{p}:{u[:60]}" for p, u in USES])
def test_a_repogen_command_shown_exists_with_its_options(page, use):
    words = use.split()
    own = PASSTHROUGH.split(use, maxsplit=1)[0]
    context = click.Context(cli)
    if words[1].startswith("-") or words[1].isupper():  # `repogen --version`, `repogen COMMAND --help`
        command: click.Command = cli
        own = own.split(None, 1)[1]
    else:
        name = words[1]
        found = cli.get_command(context, name)
        assert found is not None, f"{page}: `{use}` names no repogen command {name!r}"
        command = found
        own = own.split(None, 2)[2] if len(own.split(None, 2)) > 2 else ""
    unknown = sorted(set(OPTION.findall(own)) - _options(command) - {"-h", "--help"})
    assert not unknown, f"{page}: `{use}`: repogen {command.name} has no option {unknown}"


def test_every_make_target_shown_exists():
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))
    shown = set()
    for page in PAGES:
        for line in _shell_lines(page.read_text(encoding="utf-8")):
            shown |= {m[1] for m in re.finditer(r"(?:^|&&\s*)make ([\w-]+)", line)}
    assert {"demo", "test", "install", "bench"} <= shown
    assert shown <= targets, f"the pages show make targets the Makefile lacks: {sorted(shown - targets)}"


def test_the_readme_runs_the_quickstart_on_the_release_deploy_defaults_to():
    lines = [line for line in _shell_lines(README.read_text(encoding="utf-8")) if line.startswith("docker run ")]
    assert len(lines) == 1, lines
    line = lines[0]
    assert f" {IMAGE_REPOSITORY}:{NEWEST.ngc}-py3 tritonserver --model-repository=/models" in line
    quickstart = read_repository(ROOT / "tests" / "golden" / "quickstart" / "expected")
    assert f"--shm-size={shm_size_bytes(quickstart.python_instances()) >> 20}m " in line
    # as tests/containers/test_standins.py serves it: the repository mounted read-only at /models
    assert re.search(r" -v \S+:/models:ro ", line)
    section = README.read_text(encoding="utf-8").split("\n## Deploy", 1)[1].split("\n## ", 1)[0]
    assert f"NGC {NEWEST.ngc} (tritonserver {NEWEST.tritonserver}, Python {NEWEST.python})" in section


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move the detail into a page under docs/"
    assert any("make demo" in line for line in lines[:40]) and any("make test" in line for line in lines[:40])
    assert max(len(line) for line in lines) <= 120
