"""repogen's own version, recorded in every generated file header and manifest."""

__version__ = "0.1.0"
