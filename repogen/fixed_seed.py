"""Running this repogen again in a fresh process: the same interpreter, its flags, this very package.

``repogen build`` pickles under a fixed string-hash seed: a set inside a container (``{"k": {"a", "b"}}``)
is written by the C pickler in hash order, which follows ``PYTHONHASHSEED`` and which no pickler hook
reaches (measured: three seeds, three different ``model.pkl``). The seed is fixed only at interpreter
start, so the CLI starts again under ``PYTHONHASHSEED=0``; ``serve --reload`` builds in a fresh process
for a fresh import of the user's code. ``python -m repogen`` would put the working directory first on
``sys.path`` (a ``repogen/`` folder there would run instead) and drop ``-X``/``-W``/``-O``; the command
here repeats the flags and runs ``fixed_seed_cli.py``, which loads the package from this one's directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HASH_SEED = "0"

# sys.flags attribute -> its command-line letter, repeated as often as it was given (-OO, -vv).
_LETTERS = {
    "debug": "d", "optimize": "O", "dont_write_bytecode": "B", "no_user_site": "s", "no_site": "S",
    "ignore_environment": "E", "verbose": "v", "bytes_warning": "b", "quiet": "q", "isolated": "I", "safe_path": "P",
}  # fmt: skip


def interpreter_flags() -> list[str]:
    """The options this interpreter was started with (``-O``, ``-I``, ``-W...``, ``-X ...``), to start another alike."""
    flags = []
    for name, letter in _LETTERS.items():
        count = int(getattr(sys.flags, name, 0))
        if count > 0:
            flags.append("-" + letter * count)
    flags += [f"-W{option}" for option in sys.warnoptions]
    for key, value in sys._xoptions.items():
        flags += ["-X", key if value is True else f"{key}={value}"]
    return flags


def repogen_command(*args: str) -> list[str]:
    """``repogen ARGS`` run by this interpreter, with its flags, importing this repogen and no other."""
    return [sys.executable, *interpreter_flags(), str(Path(__file__).resolve().with_name("fixed_seed_cli.py")), *args]


def seed_is_fixed() -> bool:
    """Whether strings hash as under ``PYTHONHASHSEED=0`` in this process."""
    return sys.flags.hash_randomization == 0


def pinned_environment() -> dict[str, str]:
    return dict(os.environ, PYTHONHASHSEED=HASH_SEED)


def restart_with_fixed_seed() -> None:
    """Replace this process with the same command under ``PYTHONHASHSEED=0``, unless the seed is already fixed.

    Asked once: a child whose environment already says 0 does not restart again, even where ``-E`` or ``-I``
    made it ignore that (then the build runs with a random seed, as ``-E`` asked).
    """
    if seed_is_fixed() or os.environ.get("PYTHONHASHSEED") == HASH_SEED or os.environ.get("REPOGEN_NO_REEXEC"):
        return
    command = repogen_command(*sys.argv[1:])
    os.execve(command[0], command, pinned_environment())
