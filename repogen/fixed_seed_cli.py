"""What :mod:`repogen.fixed_seed` runs as a script: this very repogen's CLI.

A script rather than ``-c``: Python 3.13 puts ``-c`` source in ``linecache`` as ``<string>``, the name of
the code ``dataclasses`` generates, whose source the build would then look up and refuse. Run as a
script, its own directory (this package) is first on ``sys.path``, where ``errors.py`` or ``build.py``
would shadow modules of those names; it is taken off before anything else is imported.
"""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    import importlib.util

    spec = importlib.util.spec_from_file_location("repogen", os.path.join(here, "__init__.py"),
                                                  submodule_search_locations=[here])  # fmt: skip
    assert spec is not None and spec.loader is not None
    package = sys.modules["repogen"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(package)
    sys.argv[0] = "repogen"
    from repogen.cli import main

    main()
