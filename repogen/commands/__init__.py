"""One module per ``repogen`` subcommand; each exposes ``COMMANDS``, a list of click commands.

``repogen.cli`` discovers the modules here, so adding a command never edits a shared file.
"""
