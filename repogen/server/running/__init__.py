"""Running a tritonserver: the process bound to loopback (embedded, the user's binary, a container image),
``repogen serve`` as a library (:class:`~.serving.Serving`: its options, choices, banner, ``--reload``, the
foreground), and the stubs a dead server left behind.
"""
