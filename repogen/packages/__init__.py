"""Third-party distributions a payload imports, shipped inside the repository for the containers' Pythons.

``options`` says what ships (default: everything but what the container provides), ``targets``
which (Python, machine) trees a build makes, ``resolve`` pins the builder's versions with pip,
``wheels`` downloads and unpacks them into a cache keyed by hash, and ``packager`` turns a
payload's requirements into trees the writer hard-links into each model version.
"""

from .options import MODES, PackageOptions
from .packager import Packager, ShippedTree

__all__ = ["MODES", "PackageOptions", "Packager", "ShippedTree"]
