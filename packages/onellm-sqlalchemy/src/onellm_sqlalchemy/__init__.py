"""onellm-sqlalchemy."""

from onellm_sqlalchemy._version import __version__

__all__ = ["__version__"]
