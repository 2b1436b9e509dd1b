"""`JsWorkerPool`: the processes JavaScript runs execute in, and the framed socket the host talks to them through.

QuickJS-NG's own time limit does not stop some long built-ins (a `sort` or `localeCompare` over millions of elements
runs seconds past it) and counts the whole process's CPU time, so a run that must end on time cannot share the host's
process. Each run borrows one worker process; when a run passes its deadline, or its caller cancels it, the host kills
the process and the pool starts another. A worker that finished its run normally goes back to the pool.

Workers are started with `python -I` on `_worker.py`, a minimal environment, standard streams closed, in their own
session, with their address space capped (POSIX), and talk over a socket pair. The socket is the only thing they share
with the host, and an idle worker exits when the host's end closes, so workers never outlive their host for long.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import msgspec

__all__ = ["JsWorkerPool"]

_HEADER = struct.Struct(">I")
_WORKER = Path(__file__).with_name("_worker.py")
_MAX_FRAME = 128 * 1024 * 1024
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_KEPT_ENVIRONMENT = ("PATH", "SYSTEMROOT", "SystemRoot", "TEMP", "TMP", "TMPDIR", "LANG", "LC_ALL")


class WorkerLostError(Exception):
    """The worker process ended, closed its socket or broke the protocol."""


def _wait_readable(sock: socket.socket) -> Any:
    import anyio

    wait = getattr(anyio, "wait_readable", None)
    return wait(sock) if wait is not None else anyio.wait_socket_readable(sock)


def _wait_writable(sock: socket.socket) -> Any:
    import anyio

    wait = getattr(anyio, "wait_writable", None)
    return wait(sock) if wait is not None else anyio.wait_socket_writable(sock)


class Worker:
    """One worker process and the host's end of its socket (non-blocking)."""

    def __init__(self, process: subprocess.Popen[bytes], sock: socket.socket, pid: int) -> None:
        self.process = process
        self.sock = sock
        self.pid = pid
        self.runs = 0
        self.started_rss = self.rss()
        self.dead = False
        self._buffer = bytearray()

    def rss(self) -> int | None:
        """Resident bytes of the process (Linux), or None where it cannot be read."""
        try:
            with open(f"/proc/{self.pid}/statm", "rb") as handle:
                return int(handle.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            return None

    async def send(self, message: Mapping[str, Any]) -> None:
        data = _ENCODER.encode(message)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await _wait_writable(self.sock)
                continue
            except OSError as exc:
                raise WorkerLostError(str(exc)) from None
            view = view[sent:]

    async def receive(self) -> dict[str, Any]:
        while True:
            if len(self._buffer) >= 4:
                (size,) = _HEADER.unpack_from(self._buffer)
                if size > _MAX_FRAME:
                    raise WorkerLostError(f"the worker sent a frame of {size} bytes")
                if len(self._buffer) >= 4 + size:
                    data = bytes(self._buffer[4 : 4 + size])
                    del self._buffer[: 4 + size]
                    try:
                        message = _DECODER.decode(data)
                    except msgspec.DecodeError:
                        raise WorkerLostError("the worker sent a frame that is not JSON") from None
                    if not isinstance(message, dict):
                        raise WorkerLostError("the worker sent a frame that is not an object")
                    return message
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                await _wait_readable(self.sock)
                continue
            except OSError as exc:
                raise WorkerLostError(str(exc)) from None
            if not chunk:
                raise WorkerLostError("the worker closed its socket")
            self._buffer += chunk

    def kill(self) -> None:
        """End the process now (SIGKILL) and close the socket. `reap()` waits for it."""
        self.dead = True
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(OSError):
            self.sock.close()

    def reap(self, timeout: float = 5.0) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.process.wait(timeout)

    def retire(self) -> None:
        """Ask an idle worker to exit (closing the socket is enough), and reap it when it has."""
        self.dead = True
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            self.kill()
            self.reap()


def _environment() -> dict[str, str]:
    env = {name: os.environ[name] for name in _KEPT_ENVIRONMENT if name in os.environ}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class JsWorkerPool:
    """Worker processes for JavaScript runs: idle ones are reused, killed ones replaced.

    One pool per process is usually right (`JsWorkerPool.shared()`); a pool with other settings can be passed in
    `JsSandboxOptions(pool=...)`.
    """

    _shared: ClassVar[JsWorkerPool | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()
    _all: ClassVar[weakref.WeakSet[JsWorkerPool]] = weakref.WeakSet()

    def __init__(
        self,
        *,
        max_idle: int = 4,
        min_idle: int = 1,
        max_runs_per_worker: int = 500,
        address_space_bytes: int = 3 * 1024 * 1024 * 1024,
        python: str | None = None,
        start_timeout: float = 20.0,
    ) -> None:
        """Create a pool.

        Args:
            max_idle: Idle workers kept for reuse.
            min_idle: Idle workers started ahead of need (in a background thread) once the pool has been used.
            max_runs_per_worker: Runs after which a worker is retired and replaced.
            address_space_bytes: The cap on each worker's address space beyond what it maps at start (POSIX).
            python: The interpreter to start workers with; None is the running one.
            start_timeout: Seconds a new worker may take to report ready.
        """
        self.max_idle = max_idle
        self.min_idle = min(min_idle, max_idle)
        self.max_runs_per_worker = max_runs_per_worker
        self.address_space_bytes = address_space_bytes
        self.python = python or sys.executable
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._idle: list[Worker] = []
        self._busy: set[Worker] = set()
        self._warming = 0
        self._closed = False
        self.started = 0
        """Worker processes started so far."""
        self.killed = 0
        """Worker processes killed because a run did not stop (or was cancelled)."""
        JsWorkerPool._all.add(self)

    @classmethod
    def shared(cls) -> JsWorkerPool:
        with cls._shared_lock:
            if cls._shared is None or cls._shared._closed:
                cls._shared = cls()
            return cls._shared

    @property
    def idle_workers(self) -> int:
        with self._lock:
            return len(self._idle)

    @property
    def busy_workers(self) -> int:
        with self._lock:
            return len(self._busy)

    def _start(self) -> Worker:
        """Start one worker and wait for its `ready` (blocking; run in a thread)."""
        host, child = socket.socketpair()
        try:
            args = [self.python, "-I", os.fspath(_WORKER)]
            kwargs: dict[str, Any] = {
                "stdout": subprocess.DEVNULL,
                "stderr": subprocess.DEVNULL,
                "env": _environment(),
                "close_fds": True,
            }
            if os.name == "posix":
                args += ["--fd", str(child.fileno()), "--address-space", str(self.address_space_bytes)]
                process = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, pass_fds=(child.fileno(),), start_new_session=True, **kwargs
                )
            else:  # pragma: no cover - Windows
                process = subprocess.Popen(args, stdin=subprocess.PIPE, **kwargs)
                data = child.share(process.pid)  # type: ignore[attr-defined,unused-ignore]
                assert process.stdin is not None
                process.stdin.write(f"{len(data)}\n".encode() + data)
                process.stdin.close()
        finally:
            child.close()
        try:
            host.settimeout(self.start_timeout)
            header = _recv_exactly(host, 4)
            (size,) = _HEADER.unpack(header)
            ready = _DECODER.decode(_recv_exactly(host, min(size, 4096)))
            if not isinstance(ready, dict) or ready.get("t") != "ready":
                raise WorkerLostError("the worker did not report ready")
        except (OSError, WorkerLostError, msgspec.DecodeError) as exc:
            with contextlib.suppress(OSError):
                process.kill()
            host.close()
            raise WorkerLostError(f"a JavaScript worker process could not be started: {exc}") from None
        host.setblocking(False)
        with self._lock:
            self.started += 1
        return Worker(process, host, int(ready.get("pid", process.pid)))

    async def acquire(self) -> Worker:
        """An idle worker, or a new one."""
        import anyio.to_thread

        with self._lock:
            if self._closed:
                raise RuntimeError("the JavaScript worker pool is closed")
            worker = self._idle.pop() if self._idle else None
            if worker is not None:
                self._busy.add(worker)
        if worker is None:
            worker = await anyio.to_thread.run_sync(self._start)
            with self._lock:
                self._busy.add(worker)
        self._warm()
        return worker

    def _warm(self) -> None:
        with self._lock:
            if self._closed or len(self._idle) + self._warming >= self.min_idle:
                return
            self._warming += 1
        threading.Thread(target=self._warm_one, name="onellm-js-warm", daemon=True).start()

    def _warm_one(self) -> None:
        try:
            worker = self._start()
        except WorkerLostError:
            with self._lock:
                self._warming -= 1
            return
        with self._lock:
            self._warming -= 1
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(worker)
                return
        worker.retire()

    def release(self, worker: Worker) -> None:
        """Give back a worker whose run ended normally: kept for reuse unless it is worn or the pool is full."""
        worker.runs += 1
        rss = worker.rss()
        grown = rss is not None and worker.started_rss is not None and rss - worker.started_rss > 128 * 1024 * 1024
        with self._lock:
            self._busy.discard(worker)
            keep = (
                not self._closed
                and not worker.dead
                and worker.runs < self.max_runs_per_worker
                and not grown
                and len(self._idle) < self.max_idle
            )
            if keep:
                self._idle.append(worker)
                return
        threading.Thread(target=worker.retire, name="onellm-js-retire", daemon=True).start()

    def discard(self, worker: Worker) -> None:
        """Kill a worker whose run did not end normally (blocking until the process has ended)."""
        worker.kill()
        worker.reap()
        with self._lock:
            self._busy.discard(worker)
            self.killed += 1

    def close(self) -> None:
        """Stop every idle worker; busy ones are killed when their runs end."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = list(self._busy)
        for worker in idle:
            worker.retire()
        for worker in busy:
            worker.kill()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise WorkerLostError("the worker closed its socket")
        data += chunk
    return bytes(data)


@atexit.register
def _close_all() -> None:
    for pool in list(JsWorkerPool._all):
        with contextlib.suppress(Exception):
            pool.close()
