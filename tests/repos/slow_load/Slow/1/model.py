"""Hand-written: loads for a minute (a stand-in for weights that take long to load).

On entering ``initialize`` it writes its pid into ``initializing`` in its model directory, so a test knows the stub
got there (a stub killed with its server before then, while it still talks to the server, exits by itself).
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
