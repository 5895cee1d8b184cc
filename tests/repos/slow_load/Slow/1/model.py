"""Hand-written: loads for a minute (a stand-in for weights that take long to load)."""

import time


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(60)

    def execute(self, requests):
        raise NotImplementedError("never loaded long enough to be asked")
