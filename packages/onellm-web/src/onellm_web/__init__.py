"""onellm-web."""

from onellm_web._version import __version__

__all__ = ["__version__"]
