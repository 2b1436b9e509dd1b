"""The sandbox worker: a small process that runs one JavaScript run at a time on QuickJS-NG and talks to its host over
a socket.

It is started as a script (`python -I _worker.py --fd N`), so it imports only the standard library and `_quickjs`,
never onellm: a worker starts in a few tens of milliseconds and holds no grant, no key and no host object. Everything
a script may do outside the engine (read or write a file, fetch, log, add a cost line) is a message to the host, which
checks it and answers; the worker only relays.

Frames are a 4-byte big-endian length and a UTF-8 JSON object. The host sends `run` and `settle`; the worker answers
`ready` once, then `calls` (host function calls, in the order the script made them) and one `done` per run.

Limits kept here: the engine's memory ceiling and stack size, a CPU-time budget spent across every piece of JavaScript
the run executes (the engine's own interrupt checks it between steps, inside regular expressions too), and a wall-clock
deadline checked after every job. The host does not rely on them: it kills a worker that has not answered by the
run's time limit plus a grace period.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import socket
import struct
import sys
import time
from typing import Any

import _quickjs  # type: ignore[import-not-found]

_HEADER = struct.Struct(">I")
_MAX_FRAME = 256 * 1024 * 1024
_PRELUDE = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_prelude.js"), encoding="utf-8").read()  # noqa: SIM115
# Extra CPU seconds for the worker's own JavaScript after the script's budget is spent (reading the console, the
# outbox): never enough to run a script, enough to report.
_REPORT_CPU = 0.2
_FRAME_RE = re.compile(r"^\s+at (.*?) \((?:<input>:(\d+):(\d+)|native)\)\s*$")
_SYNTAX_AT = re.compile(r"^\s+at <input>:(\d+):(\d+)\s*$")


_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _keep_pairs(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if len(text) != 6 else "\\ufffd"


def _clean_json(text: str) -> str:
    """JSON text with every lone surrogate escape (`\\ud800` without its pair) replaced by U+FFFD, which strict UTF-8
    decoders (the host's) accept."""
    if _SURROGATE_HINT.search(text) is None:
        return text
    return _SURROGATE_ESCAPES.sub(_keep_pairs, text)


def _replacement(error: UnicodeError) -> tuple[bytes, int]:
    """Encode a lone surrogate as U+FFFD (the UTF-8 encoder takes only ASCII text or bytes from a handler)."""
    assert isinstance(error, UnicodeEncodeError)
    return "\ufffd".encode() * (error.end - error.start), error.end


codecs.register_error("onellm-js-replace", _replacement)


class _Fuel(Exception):
    pass


class _Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "onellm-js-replace")
        self.sock.sendall(_HEADER.pack(len(data)) + data)

    def receive(self, timeout: float | None = None) -> dict[str, Any] | None:
        self.sock.settimeout(timeout)
        while True:
            if len(self.buffer) >= 4:
                (size,) = _HEADER.unpack_from(self.buffer)
                if size > _MAX_FRAME:
                    raise ValueError("frame too large")
                if len(self.buffer) >= 4 + size:
                    data = bytes(self.buffer[4 : 4 + size])
                    del self.buffer[: 4 + size]
                    result: dict[str, Any] = json.loads(data.decode("utf-8", "surrogatepass"))
                    return result
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buffer += chunk


def _error(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": "", "message": message, "messageLength": len(message), "frames": [], **extra}


def _frames(stack: str, line_offset: int) -> list[list[Any]]:
    """User frames of a stack text: [function, line, column], or [function, None, None] for a native frame."""
    out: list[list[Any]] = []
    for text in stack.splitlines():
        m = _FRAME_RE.match(text)
        if m is None:
            continue
        if m.group(2) is None:
            out.append([m.group(1), None, None])
            continue
        line = int(m.group(2)) - line_offset
        if line < 1:
            continue
        out.append([m.group(1), line, int(m.group(3))])
    return out


def _uncaught(text: str, line_offset: int) -> dict[str, Any]:
    """An error the engine raised to Python (a syntax error, mostly): its first line and its position."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    name, _, message = first.partition(": ")
    if not message:
        name, message = "", first
    frames = _frames(text, line_offset)
    for rest in lines[1:]:
        m = _SYNTAX_AT.match(rest)
        if m is not None:
            line = int(m.group(1)) - line_offset
            if line >= 1:
                frames.insert(0, ["", line, int(m.group(2))])
            break
    kind = "syntax" if name == "SyntaxError" else "script"
    return {"kind": kind, "name": name, "message": message, "messageLength": len(message), "frames": frames}


class _Run:
    """One run: a fresh context, the prelude, the script, then jobs and host calls until the script settles."""

    def __init__(self, channel: _Channel, job: dict[str, Any]) -> None:
        self.channel = channel
        self.job = job
        limits = job["limits"]
        self.cpu_left = float(limits["cpu"])
        self.deadline = time.monotonic() + float(limits["time"])
        self.line_offset = int(job.get("lineOffset", 0))
        self.context = _quickjs.Context()
        self.context.set_memory_limit(int(limits["memory"]))
        self.context.set_max_stack_size(int(limits["stack"]))
        self.control: Any = None

    # -------------------------------------------------------------------------------------------- metering

    def js(self, fn: Any, *args: Any) -> Any:
        """Run a piece of JavaScript against the run's CPU budget."""
        if self.cpu_left <= 0:
            raise _Fuel
        self.context.set_time_limit(self.cpu_left)
        started = time.process_time()
        try:
            return fn(*args)
        finally:
            self.cpu_left -= time.process_time() - started

    def report(self, fn: Any, *args: Any) -> Any:
        """Run the worker's own JavaScript after the budget may be gone (console, outbox, the OOM flag)."""
        self.context.set_time_limit(_REPORT_CPU)
        return fn(*args)

    def out_of_memory(self) -> bool:
        try:
            return bool(self.report(self.control, "oom"))
        except Exception:
            return True

    # -------------------------------------------------------------------------------------------- the run

    def execute(self) -> dict[str, Any]:
        try:
            outcome = self._execute()
        except _Fuel:
            outcome = {"error": self._fuel()}
        except _quickjs.JSException as exc:
            outcome = {"error": self._classify(exc)}
        except MemoryError:
            outcome = {"error": _error("memory", "the run used more memory than the sandbox process may hold")}
        except RecursionError:
            outcome = {"error": _error("script", "RangeError: Maximum call stack size exceeded")}
        outcome["console"] = self._console()
        outcome["calls"] = self._take(final=True)
        return outcome

    def _execute(self) -> dict[str, Any]:
        job = self.job
        prelude = self.js(self.context.eval, _PRELUDE)
        self.control = self.js(prelude, json.dumps(job["config"]))
        if job["mode"] == "body":
            fn = self.js(self.context.eval, job["source"])
            self.js(self.control, "body", fn, job.get("input", "null"))
        else:
            evaluation = self.js(self.context.module, job["source"])
            self.js(self.control, "module", evaluation, job.get("entry"), job.get("args", "[]"))
        while True:
            while self.js(self.context.execute_pending_job):
                if time.monotonic() > self.deadline:
                    return {"error": self._time()}
                if self.report(self.control, "status") != "pending":
                    break  # the script has its result: jobs it left behind do not run
            if self.out_of_memory():
                return {"error": self._memory()}
            if self.report(self.control, "status") != "pending":
                # The script has its result: requests it made on the way out are dropped (one-way lines are kept).
                break
            calls = self._take(final=False)
            if calls:
                self.channel.send({"t": "calls", "calls": calls})
            if self.report(self.control, "outstanding") == 0:
                return {
                    "error": _error(
                        "script",
                        "the script is waiting for a promise that can never settle (nothing is left to run)",
                    )
                }
            left = self.deadline - time.monotonic()
            if left <= 0:
                return {"error": self._time()}
            try:
                message = self.channel.receive(timeout=left)
            except TimeoutError:
                return {"error": self._time()}
            if message is None:
                raise SystemExit(0)
            if message.get("t") != "settle":
                continue
            self.js(self.control, "settle", int(message["id"]), message["ok"], message["value"])
        finished = json.loads(self.js(self.control, "finish"))
        if self.out_of_memory():
            return {"error": self._memory()}
        status = finished["status"]
        if status == "ok":
            return {"result": {"type": finished["type"], "json": _clean_json(finished["json"] or "null")}}
        if status == "result":
            return {"error": _error("result", finished["message"])}
        error = finished["error"]
        if error.get("name") == "InternalError" and error.get("message") == "out of memory":
            # The engine's own error, reaching the end without the flag when it was raised where no stack trace
            # could be prepared for it: the memory limit all the same.
            return {"error": self._memory()}
        frames = _frames(error.get("stack", ""), self.line_offset)
        kind = "script"
        return {
            "error": {
                "kind": kind,
                "name": error.get("name", ""),
                "message": error.get("message", ""),
                "messageLength": error.get("messageLength", 0),
                "isError": error.get("isError", False),
                "frames": frames,
            }
        }

    # -------------------------------------------------------------------------------------------- reports

    def _take(self, *, final: bool) -> list[Any]:
        if self.control is None:
            return []
        try:
            if final:
                self.report(self.control, "close")
            batch = self.report(self.control, "take")
        except Exception:
            return []
        if not batch:
            return []
        calls: list[Any] = json.loads(_clean_json(batch))
        if final:
            # The run has ended: requests the host never started are dropped; one-way lines still count.
            calls = [c for c in calls if c[0] == 0]
        return calls

    def _console(self) -> dict[str, Any]:
        if self.control is None:
            return {"head": "", "tail": "", "total": 0}
        try:
            result: dict[str, Any] = json.loads(self.report(self.control, "console"))
            return result
        except Exception:
            return {"head": "", "tail": "", "total": 0}

    def _fuel(self) -> dict[str, Any]:
        if self.control is not None and self.out_of_memory():
            return self._memory()
        return _error("fuel", "the script ran out of fuel (its budget of engine steps)")

    def _memory(self) -> dict[str, Any]:
        return _error("memory", "the script allocated more memory than the sandbox allows")

    def _time(self) -> dict[str, Any]:
        return _error("time", "the script ran past its time limit")

    def _classify(self, exc: _quickjs.JSException) -> dict[str, Any]:
        text = str(exc)
        if self.control is not None and self.out_of_memory():
            return self._memory()
        if text.startswith("InternalError: interrupted"):
            if self.cpu_left <= 0.001 or time.monotonic() <= self.deadline:
                return self._fuel()
            return self._time()
        if text.startswith(("InternalError: out of memory", "null")):
            return self._memory()
        return _uncaught(text, self.line_offset)


def _limit_address_space(extra: int) -> None:
    """Cap the worker's address space at what it maps now plus `extra` bytes (POSIX): a backstop under the engine's
    own memory limit, so a run that slips past it fails to allocate instead of taking the machine's memory."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[0])
        current = pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return
    limit = current + extra
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError):
        return


def _connect(argv: list[str]) -> socket.socket:
    if "--fd" in argv:
        fd = int(argv[argv.index("--fd") + 1])
        return socket.socket(fileno=fd)
    # Windows: the host writes the shared socket's data to standard input.
    size = int(sys.stdin.buffer.readline())
    data = sys.stdin.buffer.read(size)
    shared: socket.socket = socket.fromshare(data)  # type: ignore[attr-defined,unused-ignore]
    return shared


def main(argv: list[str]) -> int:
    sock = _connect(argv)
    if "--address-space" in argv:
        _limit_address_space(int(argv[argv.index("--address-space") + 1]))
    channel = _Channel(sock)
    channel.send({"t": "ready", "pid": os.getpid()})
    while True:
        try:
            message = channel.receive()
        except (OSError, ValueError):
            return 0
        if message is None or message.get("t") == "exit":
            return 0
        if message.get("t") != "run":
            continue
        run = _Run(channel, message)
        try:
            outcome = run.execute()
        finally:
            run.control = None
        del run
        outcome["t"] = "done"
        try:
            channel.send(outcome)
        except OSError:
            return 0


def _main_with_stack(argv: list[str]) -> int:
    """Run `main` on a thread with a stack larger than any the engine is told it may use (16 MiB), whatever the
    platform's default for the main thread."""
    import threading

    result: list[int] = [1]

    def target() -> None:
        result[0] = main(argv)

    threading.stack_size(64 * 1024 * 1024)
    thread = threading.Thread(target=target, name="onellm-js-run")
    thread.start()
    thread.join()
    return result[0]


if __name__ == "__main__":
    sys.exit(_main_with_stack(sys.argv))
