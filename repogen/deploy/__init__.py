"""Deploying a built repository: ``repogen deploy`` writes a Dockerfile, Kubernetes and KServe files.

Everything is derived from the *built* repository (read with :mod:`repogen.ondisk.reader`),
so nothing needs the user's source except the in-image build of a Dockerfile.
"""

from ..errors import DeployError
from .files import DeployOutput, generate
from .options import DeployOptions

__all__ = ["DeployError", "DeployOptions", "DeployOutput", "generate"]
