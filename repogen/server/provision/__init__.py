"""Provisioning: the stock tritonserver from PyPI's wheel, numpy-only venvs of the containers' Pythons, perf_analyzer.

Everything here downloads or installs into the cache (``$REPOGEN_CACHE_DIR``) and is done once.
"""
