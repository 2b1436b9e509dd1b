"""The `onellm` command."""

from onellm_cli._app import app, main
from onellm_cli._version import __version__

__all__ = ["__version__", "app", "main"]
