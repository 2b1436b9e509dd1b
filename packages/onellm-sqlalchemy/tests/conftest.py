from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

# The store conformance suite and the race test open stores in other processes through "module:function"; those
# processes get this process's sys.path, so the helper module next to this file must be importable from them.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)

from sqlalchemy_databases import SCHEMA_VARIABLE, create_schema, drop_schema, postgres_url  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[str]:
    """The URL of the test server, checked reachable, with this session's schema set up (and dropped after)."""
    url = postgres_url()
    try:
        engine = create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 10})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        pytest.fail(f"cannot reach the PostgreSQL server of ONELLM_TEST_POSTGRES_URL: {exc}")
    name = create_schema(url)
    os.environ[SCHEMA_VARIABLE] = name
    try:
        yield name
    finally:
        os.environ.pop(SCHEMA_VARIABLE, None)
        drop_schema(url, name)
