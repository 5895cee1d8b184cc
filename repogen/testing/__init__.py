"""Test helpers: a pytest plugin that runs models on a real tritonserver.

Enable it with ``pytest_plugins = ["repogen.testing.pytest_plugin"]`` in ``conftest.py``.
It provides the ``triton_install`` (session: the serving pairing under test, see
:mod:`repogen.testing.server_under_test`), ``triton_server`` (factory) and ``repogen_cache_dir`` fixtures
and registers the ``integration`` marker. :mod:`repogen.testing.builders` builds with other
Pythons. Not imported here, so that importing ``repogen.testing`` never imports pytest before
pytest's assertion rewriting is set up.
"""
