import pytest

from repogen.testing.bytecode_scan import bytecode_in_repository

pytest_plugins = ["repogen.testing.pytest_plugin"]


def pytest_configure(config):
    """Markers of this repository's own suites (the plugin registers ``integration``)."""
    config.addinivalue_line("markers", "soak: sustained load (10,000 requests); deselect with -m 'not soak'")
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (tests/gpu; make test-gpu), skipped without one")
    config.addinivalue_line(
        "markers", "smoke: the subset `make test` runs on every serving pairing besides the full one (-m smoke)"
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every payload any test built (all under pytest's base temp) must be free of bytecode.

    Repositories built with --pin-python carry bytecode by design and say so in model.json.
    """
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(factory, "_basetemp", None) is None:
        return
    found = bytecode_in_repository(factory.getbasetemp())
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{path}: {'; '.join(problems[:3])}" for path, problems in sorted(found.items())]
    if reporter is not None:
        reporter.section("portable payloads holding bytecode", sep="=", red=True)
        for line in lines:
            reporter.write_line(line)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
