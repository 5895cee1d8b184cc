"""One module per ``repogen`` subcommand; each exposes ``COMMANDS``, a list of click commands.

``repogen.cli`` discovers the modules here, so adding a command never edits a shared file. Shared
parameter types (``--triton-release``) live in :mod:`repogen.commands.params`. A command raises
:class:`~repogen.errors.RepogenError` for anything that goes wrong; ``repogen.cli`` prints it.
"""
