pytest_plugins = ["repogen.testing.pytest_plugin"]
