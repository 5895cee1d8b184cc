"""Test helpers: a pytest plugin that runs models on a real tritonserver.

Enable it with ``pytest_plugins = ["repogen.testing.pytest_plugin"]`` in ``conftest.py``.
It provides the ``triton_install`` (session) and ``triton_server`` (factory) fixtures and
registers the ``integration`` marker. Not imported here, so that importing
``repogen.testing`` never imports pytest before pytest's assertion rewriting is set up.
"""
