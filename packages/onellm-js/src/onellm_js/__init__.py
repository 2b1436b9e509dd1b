"""onellm-js."""

from onellm_js._version import __version__

__all__ = ["__version__"]
