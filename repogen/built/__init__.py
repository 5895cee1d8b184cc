"""Developer-loop tools over a model repository on disk: ``validate``, ``inspect``, ``diff``.

They read any repository, generated or hand-written, and never import the user's code, so they
work in CI on a checked-out repository without the build environment. The ``repogen`` commands
in ``repogen.commands`` are thin click wrappers over these modules.
"""
