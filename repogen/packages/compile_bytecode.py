"""Run by a container's Python (not imported): compile unpacked wheels into bytecode overlays.

Each stdin line is a JSON pair ``[tree, overlay]``: every ``.py`` under ``tree`` is compiled with
unchecked-hash invalidation (valid wherever the tree is copied, whatever the mtimes) into
``overlay``, at the path the importer looks for it beside the source. Files this Python cannot
compile (tests written for another version) are skipped: the importer compiles them if ever used.
Standard library only; it must run on every Python a container has.
"""

import importlib.util
import json
import os
import py_compile
import sys


def main() -> int:
    for line in sys.stdin:
        tree, overlay = json.loads(line)
        for folder, dirs, files in os.walk(tree):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                source = os.path.join(folder, name)
                relative = os.path.relpath(source, tree)
                target = os.path.join(overlay, importlib.util.cache_from_source(relative))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                try:
                    py_compile.compile(
                        source,
                        cfile=target,
                        dfile=relative,
                        doraise=True,
                        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                    )
                except (py_compile.PyCompileError, SyntaxError, ValueError):
                    continue
    return 0


if __name__ == "__main__":
    sys.exit(main())
