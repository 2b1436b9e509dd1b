"""The `onellm` command: run agents, scripts and deciders, chat, inspect instances, their cost and the catalog.

`main()` is the console entry point; `app` is the typer application, `invoke(argv)` runs a command line and returns its
exit code.
"""

from onellm_cli._app import app, invoke, main
from onellm_cli._version import __version__

__all__ = ["__version__", "app", "invoke", "main"]
