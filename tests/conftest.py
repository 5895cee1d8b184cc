pytest_plugins = ["repogen.testing.pytest_plugin"]


def pytest_configure(config):
    """Markers of this repository's own suites (the plugin registers ``integration``)."""
    config.addinivalue_line("markers", "soak: sustained load (10,000 requests); deselect with -m 'not soak'")
