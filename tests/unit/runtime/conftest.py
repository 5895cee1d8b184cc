"""The emulated GPU (repogen.testing.emulated_gpu) for the runtime's tests of what a GPU instance does: one fixture,
installed for the test and removed after it."""

import pytest

from repogen.testing.emulated_gpu import emulated


@pytest.fixture
def gpu():
    with emulated() as emulator:
        yield emulator
