"""A model repository on disk, after the build: reading it, ``validate``, ``inspect``, ``diff``.

:mod:`repogen.ondisk.repository` is the one reader of a built repository (configs, versions,
``model.json``, the manifest); ``serve`` and ``deploy`` read through it too. These modules read any
repository, generated or hand-written, and never import the user's code, so they work in CI on a
checked-out repository without the build environment. The ``repogen`` commands in
``repogen.commands`` are thin click wrappers over them.
"""
