"""An exclusive lock file that the operating system frees when its holder dies.

POSIX: `flock` on an open descriptor. The lock belongs to that open file description, so a second open of the same
file in the same process is refused just as another process would be. On release the file is unlinked while still
locked; a taker that opened the old file before the unlink notices (its descriptor no longer names the path) and
tries again, so two holders can never each lock a different file of the same name.

Windows: `msvcrt.locking` on the first byte; the file stays (it cannot be unlinked while open).

The lock file is opened without following a symbolic link and must be a regular file: a `<id>.lock` planted as a link
to some other file would otherwise have that file truncated and overwritten with the holder's process id.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path

from onellm._files import kind_of, storage_error
from onellm.errors import StorageError

__all__ = ["FileLock"]

_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
)
_BUSY = {errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK}


class FileLock:
    """A held lock on `path`. Obtain one with `FileLock.try_acquire`."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, path: Path) -> FileLock | None:
        """Lock `path` (creating it), or return None when another holder has it.

        Raises:
            StorageError: the lock file cannot be made or opened (a read-only or full disk), or it is a symbolic link
                or anything but a regular file.
        """
        try:
            return cls._try_acquire(path)
        except OSError as exc:
            raise storage_error(exc, path, "acquire", what="the lock file") from exc

    @classmethod
    def _try_acquire(cls, path: Path) -> FileLock | None:
        while True:
            fd = os.open(path, _FLAGS, 0o666)
            try:
                mine = os.fstat(fd)
                if not stat.S_ISREG(mine.st_mode):
                    raise StorageError(
                        f"cannot acquire the lock file {path}: it is {kind_of(mine.st_mode)}, not a regular file",
                        path=str(path),
                        operation="acquire",
                    )
                if not _lock(fd):
                    os.close(fd)
                    return None
                if sys.platform != "win32":
                    try:
                        on_disk = os.lstat(path)
                    except FileNotFoundError:
                        os.close(fd)
                        continue
                    if (mine.st_ino, mine.st_dev) != (on_disk.st_ino, on_disk.st_dev):
                        os.close(fd)
                        continue
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise
            return cls(path, fd)

    @property
    def held(self) -> bool:
        """True until `release`."""
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (and, on POSIX, its file). Releasing twice is harmless."""
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        if sys.platform == "win32":
            try:
                _unlock(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def __del__(self) -> None:
        fd = self._fd
        if fd is not None:
            self._fd = None
            with contextlib.suppress(OSError):
                os.close(fd)


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in _BUSY:
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
