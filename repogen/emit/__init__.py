"""IR → files of a Triton model repository."""
