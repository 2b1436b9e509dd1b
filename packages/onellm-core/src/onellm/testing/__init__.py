"""Test helpers that are part of the public API.

- `onellm.testing.store_conformance`: the behaviour every `InstanceStore` must have, as a pytest base class that a
  store's own test module subclasses (it needs pytest and anyio's pytest plugin, which the tests already use).
"""

from __future__ import annotations

__all__: list[str] = []
