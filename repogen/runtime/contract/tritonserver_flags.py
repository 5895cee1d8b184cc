"""The contract's tritonserver flags: those a model depends on, their spellings, and how a command line gives them.

``repogen.triton.server_options`` writes the flags a repository's models need into the manifest and every way
repogen starts a server passes them; runtime/server_flags.py finds a server started without them, runtime/transfers.py
reads the CUDA pool's size. A module of the contract's package apart from its ``__init__``, which every model carries,
so that only the models that depend on a flag carry these words (emit/vendoring.py).
"""

from __future__ import annotations

from collections.abc import Sequence

POOL_FLAG = "--cuda-memory-pool-byte-size"  # tritonserver's CUDA memory pool per GPU
CUDA_POOL_DEFAULT = 64 << 20  # its size where the flag is not given
CACHE_FLAG = "--cache-config"
OLD_CACHE_FLAG = "--response-cache-byte-size"
"""tritonserver's former spelling (deprecated since 23.03, still read): a local cache; refused beside CACHE_FLAG."""
RATE_LIMIT_FLAG = "--rate-limit"
RATE_LIMIT_MODE = "execution_count"
RESOURCE_FLAG = "--rate-limit-resource"


def flag_values(argv: Sequence[str] | None, flag: str) -> list[str]:
    """Every value ``argv`` gives ``flag``, as ``--flag=value`` or ``--flag value``, in order."""
    found = []
    args = list(argv or ())
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            found.append(arg[len(flag) + 1 :])
        elif arg == flag and index + 1 < len(args):
            found.append(args[index + 1])
    return found


def given_by(argv: Sequence[str] | None, flag: str, value: str) -> bool:
    """Whether ``argv`` says something of what ``flag=value`` is about (the flag; for a repeatable one, the same
    resource or device), so that a tool adding the option leaves the user's own choice alone."""
    given = flag_values(argv, flag)
    if flag in (RESOURCE_FLAG, POOL_FLAG):
        key = value.split(":")[0].lower()
        return any(v.split(":")[0].lower() == key for v in given)
    return bool(given) or flag == CACHE_FLAG and bool(flag_values(argv, OLD_CACHE_FLAG))
