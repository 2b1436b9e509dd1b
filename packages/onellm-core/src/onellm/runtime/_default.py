"""The default runtime: the one `use_runtime` set in this context (a context variable, so concurrent tasks and tests
do not see each other's), else the process default, made from the environment on first use."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

from onellm.runtime._runtime import Runtime

__all__ = ["current_runtime", "set_default_runtime", "use_runtime"]

_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("onellm_runtime", default=None)
_PROCESS: list[Runtime] = []
_PROCESS_LOCK = threading.Lock()


def current_runtime() -> Runtime:
    """The runtime the verbs use: the one `use_runtime` set in this context, else the process default (made from
    the environment on first use: `ONELLM_INSTANCES`, `ONELLM_RECORDS`)."""
    rt = _CURRENT.get()
    if rt is not None:
        return rt
    if _PROCESS:
        return _PROCESS[0]
    with _PROCESS_LOCK:
        if not _PROCESS:
            _PROCESS.append(Runtime.from_environment())
        return _PROCESS[0]


def set_default_runtime(runtime: Runtime | None) -> None:
    """Make `runtime` the process-wide default (None: back to one made from the environment on next use)."""
    if runtime is not None and not isinstance(runtime, Runtime):
        raise TypeError(f"expected a Runtime, not {type(runtime).__name__}")
    with _PROCESS_LOCK:
        _PROCESS.clear()
        if runtime is not None:
            _PROCESS.append(runtime)


@contextlib.contextmanager
def use_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """Use `runtime` for the verbs within this block (a context variable: tasks and tests do not see each other's)."""
    if not isinstance(runtime, Runtime):
        raise TypeError(f"expected a Runtime, not {type(runtime).__name__}")
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
