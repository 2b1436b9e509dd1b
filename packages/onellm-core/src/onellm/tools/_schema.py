"""The type-to-schema compiler's former home: it is `onellm.schema` now, and this module re-exports it for code that
still imports it from here."""

from onellm.schema import *  # noqa: F403
from onellm.schema import __all__ as __all__
