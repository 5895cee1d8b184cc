"""Talking to a running server: ``repogen infer`` (values typed on the command line), ``repogen perf``,
and what the repository index says about each model.
"""
