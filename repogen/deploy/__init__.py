"""Serving and deploying built repositories: ``repogen serve``, ``repogen infer``, ``repogen deploy``.

Everything here reads a *built* repository (configs, ``model.json``, manifest) or talks to a
running server; nothing needs the user's source except the in-image build of a Dockerfile.
"""

from .files import DeployOptions, DeployOutput, generate
from .repository import DeployError, ModelInfo, RepositoryInfo, read_repository

__all__ = ["DeployError", "DeployOptions", "DeployOutput", "ModelInfo", "RepositoryInfo", "generate", "read_repository"]
