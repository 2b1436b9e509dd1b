"""Fixtures for onellm-js: a worker pool for the whole session, small limits so limit tests end quickly, and helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onellm.capabilities import Capabilities
from onellm.tools import ToolContext
from onellm_js import JsRunLimiter, JsSandbox, JsSandboxOptions, JsWorkerPool


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pool() -> Iterator[JsWorkerPool]:
    workers = JsWorkerPool(max_idle=6, min_idle=2)
    try:
        yield workers
    finally:
        workers.close()


@pytest.fixture
def limiter() -> JsRunLimiter:
    """A limiter of the test's own, so runs of other tests never count against it."""
    return JsRunLimiter(max_concurrent_runs=8, max_wait=30.0)


@pytest.fixture
def make_options(pool: JsWorkerPool, limiter: JsRunLimiter) -> Callable[..., JsSandboxOptions]:
    """Options on the session's pool and the test's limiter; keyword arguments change any field."""

    def make(**changes: Any) -> JsSandboxOptions:
        changes.setdefault("pool", pool)
        changes.setdefault("limiter", limiter)
        return JsSandboxOptions(**changes)

    return make


@pytest.fixture
def sandbox(make_options: Callable[..., JsSandboxOptions]) -> JsSandbox:
    return JsSandbox(make_options())


@pytest.fixture
def small(make_options: Callable[..., JsSandboxOptions]) -> JsSandbox:
    """Tight limits, for runs that are meant to hit one: 0.25 s of CPU, 32 MiB, 3 s of wall clock."""
    return JsSandbox(make_options(fuel=10_000_000, max_allocated_bytes=32 * 1024 * 1024, time_limit=3.0))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def make_context() -> Callable[..., ToolContext]:
    """`make_context(root, network=False, read_only=False, **kw)`: a tool context with files under `root` (and
    loopback network when asked)."""

    def make(root: Path | None = None, *, network: bool = False, read_only: bool = False, **kw: Any) -> ToolContext:
        caps: Capabilities | None = None
        if root is not None:
            caps = Capabilities.read_only_files(root) if read_only else Capabilities.files(root)
        if network:
            net = Capabilities.network("127.0.0.1")
            caps = net if caps is None else caps + net
        if caps is None:
            caps = Capabilities.none()
        return ToolContext(capabilities=caps, working_directory=root, **kw)

    return make
