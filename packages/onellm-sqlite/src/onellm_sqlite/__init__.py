"""onellm-sqlite."""

from onellm_sqlite._version import __version__

__all__ = ["__version__"]
