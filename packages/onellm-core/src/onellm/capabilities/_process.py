"""Running one command: the environments a child starts from, and the process runner (output limit, timeout, and the
whole process group killed at the end)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream

__all__ = [
    "CommandResult",
    "looks_secret",
    "minimal_environment",
    "open_shell_environment",
    "platform_shell_argv",
    "replaces_loader",
    "run_process",
]


_MINIMAL_NAMES_POSIX = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TZ", "TMPDIR")
_MINIMAL_NAMES_WINDOWS = (
    "PATH",
    "PATHEXT",
    "ComSpec",
    "SystemRoot",
    "SystemDrive",
    "windir",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "ProgramData",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "TEMP",
    "TMP",
    "NUMBER_OF_PROCESSORS",
    "USERNAME",
)
# Variables that replace the program search path or the loader: never set by the model, whatever the mode.
_LOADER_NAMES = frozenset({"PATH", "PATHEXT", "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "COMSPEC"})
_LOADER_PREFIXES = ("LD_", "DYLD_")
_SECRET_SUFFIXES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIALS", "CREDENTIAL", "PWD_HASH")
_SECRET_NAMES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SECURITY_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_PROFILE",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PATH",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_FEDERATED_TOKEN_FILE",
        "AZURE_STORAGE_CONNECTION_STRING",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "NPM_TOKEN",
        "DATABASE_URL",
        "SSH_AUTH_SOCK",
    }
)
_SECRET_PREFIXES = ("AWS_SECRET", "AZURE_CLIENT_", "ARM_CLIENT_", "VAULT_")


def looks_secret(name: str) -> bool:
    """The name heuristic for variables kept from an open shell: KEY, TOKEN, SECRET or PASSWORD endings, cloud
    credential variables and a few well-known credential names."""
    upper = name.upper()
    if upper in _SECRET_NAMES or upper.startswith(_SECRET_PREFIXES):
        return True
    core = upper.rstrip("_0123456789")
    return core.endswith(_SECRET_SUFFIXES) or "SECRET" in upper or "PASSWORD" in upper or "APIKEY" in upper


def replaces_loader(name: str) -> bool:
    """True for variables that replace the program search path or the loader (`PATH`, `LD_*`, `DYLD_*`, ...)."""
    upper = name.upper()
    return upper in _LOADER_NAMES or upper.startswith(_LOADER_PREFIXES)


def minimal_environment(
    host: Mapping[str, str] | None = None, extra_names: Sequence[str] = (), *, windows: bool | None = None
) -> dict[str, str]:
    """The environment an allow-listed or approval-gated command starts from: a few names, nothing else."""
    host = os.environ if host is None else host
    windows = os.name == "nt" if windows is None else windows
    names = _MINIMAL_NAMES_WINDOWS if windows else _MINIMAL_NAMES_POSIX
    wanted = {n.upper() if windows else n for n in (*names, *extra_names)}
    env: dict[str, str] = {}
    for key, value in host.items():
        k = key.upper() if windows else key
        if k in wanted or (not windows and key.startswith("LC_")):
            env[key] = value
    return env


def open_shell_environment(host: Mapping[str, str] | None = None, *, inherit_secrets: bool = False) -> dict[str, str]:
    """The environment of an open shell: the host's, minus names that look like secrets unless told to keep them."""
    host = os.environ if host is None else host
    return {k: v for k, v in host.items() if inherit_secrets or not looks_secret(k)}


def platform_shell_argv(line: str) -> list[str]:
    """The argv that runs `line` in the platform shell."""
    if os.name == "nt":
        return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", line]
    return ["/bin/sh", "-c", line]


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a finished (or killed) command produced."""

    exit_code: int | None
    """The exit status; negative for a signal on posix; None when it was killed at the timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    stdout_bytes: int = 0
    """Bytes the program wrote to stdout, including any elided."""
    stderr_bytes: int = 0
    duration_seconds: float = 0.0

    @property
    def truncated(self) -> bool:
        """True when output was elided from either stream."""
        return self.stdout_bytes > len(self.stdout.encode()) or self.stderr_bytes > len(self.stderr.encode())


class _HeadTail:
    """Keeps the first and last bytes of a stream within a limit."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.head_limit = self.limit // 2
        self.tail_limit = self.limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        if self.total <= self.limit:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        elided = self.total - kept
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        return f"{head}\n[... {elided} bytes elided ...]\n{tail}"


def _kill_tree(pid: int, *, exited: bool) -> None:
    """Kill the process group (posix) or the process tree (Windows) started for `pid`.

    On posix the group outlives its leader, so leftovers are killed after a normal exit too. On Windows the tree is
    found by process id, which the system may reuse once the process has exited, so only a running process is killed.
    """
    if sys.platform == "win32":
        if exited:
            return
        import subprocess

        subprocess.run(
            ["taskkill", "/T", "/F", "/PID", str(pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_seconds: float = 30.0,
    output_limit_bytes: int = 10 * 1024,
) -> CommandResult:
    """Run a program with no stdin, keep the head and tail of each stream, and kill its whole group at the end.

    The child starts in a new session (its own process group) so a timeout or a cancellation kills it and every child
    it started in that group. Leftover members of the group are killed when the program exits, too. A child that
    detaches into another session is not reached.
    """
    import subprocess

    import anyio

    started = time.monotonic()
    out = _HeadTail(output_limit_bytes)
    err = _HeadTail(output_limit_bytes)
    kwargs: dict[str, object] = {}
    if os.name == "nt":
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        kwargs["start_new_session"] = True
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        **kwargs,  # type: ignore[arg-type]
    )
    timed_out = False

    async def pump(stream: ByteReceiveStream | None, sink: _HeadTail) -> None:
        if stream is None:
            return
        try:
            async for chunk in stream:
                sink.feed(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return

    try:
        with anyio.move_on_after(timeout_seconds) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump, process.stdout, out)
                tg.start_soon(pump, process.stderr, err)
                await process.wait()
                # Members of the group still holding the pipes open would keep the pumps waiting.
                _kill_tree(process.pid, exited=True)
        if scope.cancelled_caught:
            timed_out = True
    finally:
        _kill_tree(process.pid, exited=process.returncode is not None)
        with anyio.CancelScope(shield=True):
            try:
                with anyio.move_on_after(5):
                    await process.wait()
            finally:
                await process.aclose()
    code = None if timed_out else process.returncode
    return CommandResult(
        exit_code=code,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        duration_seconds=time.monotonic() - started,
    )
