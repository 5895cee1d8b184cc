"""Hand-written: loads for a minute (a stand-in for weights that take long to load).

On entering ``initialize`` it writes its pid into ``initializing`` in its model directory, so a test knows the stub
is loading its model when it kills the server.
"""

import os
import time


class TritonPythonModel:
    def initialize(self, args):
        marker = os.path.join(args["model_repository"], "initializing")  # the model's directory
        with open(marker, "w") as out:
            out.write(str(os.getpid()))
        time.sleep(60)

    def execute(self, requests):
        raise NotImplementedError("never loaded long enough to be asked")
