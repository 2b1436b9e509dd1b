from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "instances"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def corpus() -> Path:
    return CORPUS
