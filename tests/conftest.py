from collections.abc import Callable
from pathlib import Path

import pytest

from repogen.testing.bytecode_scan import bytecode_in_repository

pytest_plugins = ["repogen.testing.pytest_plugin"]

_DAMAGED = pytest.StashKey[set[Path]]()


def pytest_configure(config):
    """Markers of this repository's own suites (the plugin registers ``integration``)."""
    config.addinivalue_line("markers", "soak: sustained load (10,000 requests); deselect with -m 'not soak'")
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (tests/gpu; make test-gpu), skipped without one")
    config.addinivalue_line(
        "markers", "smoke: the subset `make test` runs on every serving pairing besides the full one (-m smoke)"
    )


@pytest.fixture(scope="session")
def damaged_on_purpose(pytestconfig: pytest.Config) -> Callable[[Path], Path]:
    """``damaged_on_purpose(path)``: a tree or payload a test corrupts to see it refused. The session's bytecode
    gate below leaves the payloads under it out: it reports what it cannot read, and these it is not meant to."""
    damaged = pytestconfig.stash.setdefault(_DAMAGED, set())

    def mark(path: Path) -> Path:
        damaged.add(Path(path))
        return path

    return mark


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every payload any test built (all under pytest's base temp) must be free of bytecode and readable.

    Repositories built with --pin-python carry bytecode by design and say so in model.json; payloads a test
    damaged on purpose (``damaged_on_purpose``) are left out.
    """
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(factory, "_basetemp", None) is None:
        return
    damaged = session.config.stash.get(_DAMAGED, set())
    found = {
        payload: problems
        for payload, problems in bytecode_in_repository(factory.getbasetemp()).items()
        if not any(Path(payload).is_relative_to(tree) for tree in damaged)
    }
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{path}: {'; '.join(problems[:3])}" for path, problems in sorted(found.items())]
    if reporter is not None:
        reporter.section("portable payloads holding bytecode", sep="=", red=True)
        for line in lines:
            reporter.write_line(line)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
