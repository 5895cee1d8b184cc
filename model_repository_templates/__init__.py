"""Templates of the files repogen generates into a model repository (data, not code)."""
