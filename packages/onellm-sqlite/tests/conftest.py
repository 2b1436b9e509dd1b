from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The store conformance suite opens the store in another process through "module:function"; that process gets this
# process's sys.path, so the helper module next to this file must be importable from it.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
