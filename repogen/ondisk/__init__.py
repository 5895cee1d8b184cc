"""The model repository on disk: written atomically, merged by ``--model-version``, read, checked, reported on.

:mod:`~repogen.ondisk.writer` swaps a build into place under a lock and :mod:`~repogen.ondisk.merge`
adds a version beside the others; :mod:`~repogen.ondisk.reader` is the one reader of a built
repository (configs, versions, ``model.json``, the manifest), which ``serve`` and ``deploy`` read
through too; :mod:`~repogen.ondisk.integrity` says whether it is still what the build wrote; and
``validate``, ``inspect`` (describe, mermaid) and ``diff`` report on it. The readers work on any
repository, generated or hand-written, without importing the user's code, so they run in CI on a
checked-out repository. The ``repogen`` commands in ``repogen.commands`` are thin wrappers over them.
"""
