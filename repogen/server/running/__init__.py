"""Running a tritonserver: the process bound to loopback, ``repogen serve`` in the foreground, its banner,
``--reload``, and the stubs a dead server left behind.
"""
