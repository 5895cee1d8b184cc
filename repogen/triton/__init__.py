"""Facts about NVIDIA Triton that repogen relies on, each in one place.

Releases and their containers (:mod:`~repogen.triton.releases`), build targets
(:mod:`~repogen.triton.targets`), data types (:mod:`~repogen.triton.dtypes`), endpoints
(:mod:`~repogen.triton.endpoints`), the config schema (:mod:`~repogen.triton.proto`) and which release
added which of its fields (:mod:`~repogen.triton.fields`). The repository's file names live on the
runtime's side (:mod:`~repogen.runtime.contract`), which the vendored runtime reads too.
"""
