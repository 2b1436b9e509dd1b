"""Disk faults for tests of code that saves instances or writes records through onellm's file stores and sinks.

`disk_fault("full")` makes every write fail half way with `ENOSPC`, as a full disk does; `disk_fault("read-only")`
makes every call that would change the disk fail with `EROFS`. Reads work as before. The fault reaches the modules
that do onellm's file work (`FileInstanceStore`, `FileAssetStore`, `Instance.save`, `JsonlRecordSink`) through their
`os`, so the rest of the process (the test runner, the event loop) is untouched. Not thread-safe with other code
patching the same modules.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

__all__ = ["FaultyOs", "disk_fault"]

MODULES = ("onellm._files", "onellm.instances._lock", "onellm.instances._file_store", "onellm.records._sinks")
_CHANGING = ("mkdir", "replace", "rename", "unlink", "rmdir", "utime", "ftruncate", "link", "symlink")


class FaultyOs:
    """The `os` module, with the calls that change the disk failing as a full or read-only disk makes them fail."""

    def __init__(self, fault: str) -> None:
        if fault not in ("full", "read-only"):
            raise ValueError(f"a disk fault is 'full' or 'read-only', not {fault!r}")
        self.fault = fault
        """`full` or `read-only`."""
        self.failures = 0
        """How many calls failed so far."""

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if self.fault == "read-only" and name in _CHANGING:
            return self._failing(name)
        return real

    def _error(self, code: int) -> OSError:
        self.failures += 1
        return OSError(code, os.strerror(code))

    def _failing(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise self._error(errno.EROFS)

        fail.__name__ = name
        return fail

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        """`os.open`, refused on a read-only disk when it would write or create."""
        if self.fault == "read-only" and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
            raise self._error(errno.EROFS)
        return os.open(path, flags, mode, dir_fd=dir_fd)

    def write(self, fd: int, data: Any) -> int:
        """`os.write`: on a full disk, half the data is written and then there is no space left."""
        if self.fault == "read-only":
            raise self._error(errno.EROFS)
        view = memoryview(data)
        if len(view) > 1:
            return os.write(fd, view[: len(view) // 2])  # the disk fills up half way through
        raise self._error(errno.ENOSPC)

    def writev(self, fd: int, buffers: Any) -> int:
        """`os.writev`, failing as `write` does: half of what is asked, then no space left."""
        if self.fault == "read-only":
            raise self._error(errno.EROFS)
        joined = b"".join(bytes(buffer) for buffer in buffers)
        return self.write(fd, joined)


@contextlib.contextmanager
def disk_fault(fault: str) -> Iterator[FaultyOs]:
    """Within the block, onellm's file work meets a full (`"full"`) or read-only (`"read-only"`) disk.

    ```python
    import pytest

    import onellm
    from onellm.testing import disk_fault

    store = onellm.FileInstanceStore("runs")
    with disk_fault("full"):
        with pytest.raises(onellm.StorageError):
            await store.save(onellm.Instance(id="case-1", model="openai:gpt-6-luna"))
    ```

    The value bound by `as` counts the failures it caused (`failures`).
    """
    faulty = FaultyOs(fault)
    with contextlib.ExitStack() as stack:
        for module in MODULES:
            stack.enter_context(mock.patch(f"{module}.os", faulty))
        yield faulty
