"""Names of the files repogen writes into a repository, shared by the emitter and its readers.

The runtime (vendored, importing nothing of repogen's) spells ``model.json`` itself.
"""

MANIFEST = "repogen.manifest.json"  # at the repository root: a file, so tritonserver ignores it
METADATA = "model.json"  # beside each version's payload
