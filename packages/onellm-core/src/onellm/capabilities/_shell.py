"""The shell grant: splitting a command line without a shell, the allow-list, environments, and the process runner.

An allow-listed or approval-gated line never reaches a shell. It is split into words by the rules below, and anything a
shell would have given meaning to outside quotes (command separators, pipes, redirection, substitution, expansion,
globbing, comments) is refused before anything runs. Inside single quotes every character is plain text; inside double
quotes a `$` or a backtick is refused, because a reader would expect it to expand.
"""

from __future__ import annotations

import contextlib
import enum
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream

__all__ = [
    "CommandRequest",
    "CommandResult",
    "ShellApprover",
    "ShellMode",
    "ShellOptions",
    "ShellSyntaxError",
    "run_process",
    "split_command_line",
]


class ShellSyntaxError(ValueError):
    """A command line holds shell syntax, an unclosed quote or a control character. `column` is 1-based."""

    def __init__(self, reason: str, column: int) -> None:
        super().__init__(f"{reason} at column {column}")
        self.reason = reason
        self.column = column


_UNQUOTED_REFUSED = {
    ";": "command separator ';'",
    "&": "'&' (background or '&&')",
    "|": "pipe '|'",
    "<": "redirection '<'",
    ">": "redirection '>'",
    "(": "subshell '('",
    ")": "subshell ')'",
    "`": "command substitution '`'",
    "$": "expansion '$'",
    "*": "glob '*'",
    "?": "glob '?'",
    "[": "glob '['",
    "]": "glob ']'",
    "{": "brace expansion '{'",
    "}": "brace expansion '}'",
}
_WORD_START_REFUSED = {"#": "comment '#'", "~": "tilde expansion '~'", "!": "history or negation '!'"}


def split_command_line(line: str) -> list[str]:
    """Split a command line into words the way a POSIX shell would quote them, refusing everything else.

    Raises:
        ShellSyntaxError: for shell syntax outside quotes, `$` or backticks inside double quotes, an unclosed quote, a
            trailing backslash, a line break or another control character, an assignment before the program, or an
            empty line.
    """
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        col = i + 1
        if ch in "\r\n":
            raise ShellSyntaxError("line break", col)
        if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F:
            raise ShellSyntaxError(f"control character U+{ord(ch):04X}", col)
        if ch in " \t":
            if in_word:
                words.append("".join(current))
                current = []
                in_word = False
            i += 1
            continue
        if ch == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unclosed single quote", col)
            chunk = line[i + 1 : end]
            _check_controls(chunk, i + 2)
            current.append(chunk)
            in_word = True
            i = end + 1
            continue
        if ch == '"':
            i += 1
            while True:
                if i >= n:
                    raise ShellSyntaxError("unclosed double quote", col)
                c = line[i]
                if c == '"':
                    break
                if c in "$`":
                    raise ShellSyntaxError(
                        f"{'expansion' if c == '$' else 'command substitution'} {c!r} in quotes", i + 1
                    )
                if c == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    current.append(line[i + 1])
                    i += 2
                    continue
                _check_controls(c, i + 1)
                current.append(c)
                i += 1
            in_word = True
            i += 1
            continue
        if ch == "\\":
            if i + 1 >= n:
                raise ShellSyntaxError("trailing backslash", col)
            nxt = line[i + 1]
            _check_controls(nxt, i + 2)
            current.append(nxt)
            in_word = True
            i += 2
            continue
        reason = _UNQUOTED_REFUSED.get(ch)
        if reason is not None:
            raise ShellSyntaxError(reason, col)
        if not in_word and ch in _WORD_START_REFUSED:
            raise ShellSyntaxError(_WORD_START_REFUSED[ch], col)
        if ch == "=" and not words and not _has_quote_before(line, i):
            raise ShellSyntaxError("variable assignment before the program", col)
        current.append(ch)
        in_word = True
        i += 1
    if in_word:
        words.append("".join(current))
    if not words:
        raise ShellSyntaxError("empty command", 1)
    return words


def _has_quote_before(line: str, index: int) -> bool:
    start = index
    while start > 0 and line[start - 1] not in " \t":
        start -= 1
    return any(c in "'\"\\" for c in line[start:index])


def _check_controls(text: str, column: int) -> None:
    for offset, c in enumerate(text):
        if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F:
            raise ShellSyntaxError(f"control character U+{ord(c):04X}", column + offset)


# Programs that re-read their arguments as commands: an argument holding one of these characters is refused.
_CMD_REFUSED = set("&|<>^%!\"'")
_POWERSHELL_REFUSED = set(";&|$`(){}'\"")


def program_stem(program: str) -> str:
    """The lower-case base name of a program word, without a Windows executable extension."""
    base = program.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for ext in (".exe", ".com", ".bat", ".cmd"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def reinterpreter_problem(program: str, args: Sequence[str]) -> str | None:
    """Why an argument is refused to `cmd`, a batch file, `powershell` or `pwsh`, which re-read it as a command."""
    base = program.replace("\\", "/").rsplit("/", 1)[-1].lower()
    stem = program_stem(program)
    if stem == "cmd" or base.endswith((".bat", ".cmd")):
        refused, who = _CMD_REFUSED, "cmd"
    elif stem in ("powershell", "pwsh"):
        refused, who = _POWERSHELL_REFUSED, "PowerShell"
    else:
        return None
    for arg in args:
        bad = sorted(set(arg) & refused)
        if bad:
            return f"argument {arg!r} holds {''.join(bad)!r}, which {who} would read as a command"
    return None


#: Launchers: an allow-list entry whose program is one of these arms the git rule without looking further.
LAUNCHERS = frozenset(
    {
        "env",
        "nice",
        "ionice",
        "timeout",
        "nohup",
        "xargs",
        "stdbuf",
        "time",
        "command",
        "exec",
        "setsid",
        "chroot",
        "sudo",
        "doas",
        "watch",
        "parallel",
    }
)
#: Programs that run git themselves.
GIT_FRONT_ENDS = frozenset(
    {
        "gh",
        "hub",
        "gitk",
        "tig",
        "lazygit",
        "make",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "cargo",
        "pip",
        "go",
        "dotnet",
        "find",
    }
)


def _is_git_name(word: str) -> bool:
    stem = program_stem(word)
    return stem == "git" or stem.startswith("git-")


def entry_lists_git(entry: Sequence[str], path: str | None = None) -> bool:
    """True when an allow-list entry can run git: a word that is or resolves to git, a launcher, or a git front end."""
    if not entry:
        return False
    stem = program_stem(entry[0])
    if stem in LAUNCHERS or stem in GIT_FRONT_ENDS:
        return True
    for word in entry:
        if _is_git_name(word):
            return True
        if word.startswith("-"):
            continue
        found = lookup_program(word, path) if "/" not in word and "\\" not in word else word
        if found is not None:
            try:
                real = os.path.realpath(found)
            except (OSError, ValueError):
                continue
            if _is_git_name(real):
                return True
    return False


def search_path(path: str | None = None) -> list[str]:
    """The absolute directories of PATH; empty and relative entries (the working directory) are skipped."""
    raw = os.environ.get("PATH", os.defpath) if path is None else path
    return [d for d in raw.split(os.pathsep) if d and os.path.isabs(d)]


def lookup_program(program: str, path: str | None = None) -> str | None:
    """Find a bare program name on PATH only, never in the working directory. Returns its absolute path or None."""
    if "/" in program or "\\" in program or program in ("", ".", ".."):
        return None
    dirs = search_path(path)
    if not dirs:
        return None
    if os.name == "nt":
        exts = [
            e for e in os.environ.get("PATHEXT", ".COM;.EXE").split(os.pathsep) if e.lower() not in (".bat", ".cmd")
        ]
        for d in dirs:
            for ext in ["", *exts]:
                candidate = os.path.join(d, program + ext)
                if ext and os.path.isfile(candidate):
                    return candidate
        return None
    found = shutil.which(program, path=os.pathsep.join(dirs))
    return found if found and os.path.isabs(found) else None


class ShellMode(enum.Enum):
    """How a shell grant runs a line."""

    OFF = "off"
    """No commands."""
    OPEN = "open"
    """The line runs in the platform shell."""
    ALLOW_LIST = "allow_list"
    """Split without a shell; the program and leading arguments must match an entry."""
    ANY_PROGRAM = "any_program"
    """Split without a shell; any program on PATH (used with approval)."""


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """One command waiting for approval: what will run, where, with which model-set variables."""

    program: str
    args: tuple[str, ...]
    working_directory: str
    line: str
    environment: Mapping[str, str] = field(default_factory=dict)

    def display(self) -> str:
        """A one-line description for a person, with control characters shown as `\\uXXXX` escapes."""
        words = " ".join(_show(w) for w in (self.program, *self.args))
        text = f"{words}  (in {_show(self.working_directory)})"
        if self.environment:
            text += " with " + " ".join(f"{_show(k)}={_show(v)}" for k, v in self.environment.items())
        return text


def _show(text: str) -> str:
    # Control characters, and format characters (bidi overrides, zero-width joiners and the like) that could make the
    # line a person approves look different from the line that runs.
    import unicodedata

    out = []
    for c in text:
        cat = ord(c)
        if cat < 0x20 or cat == 0x7F or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(f"\\u{cat:04X}" if cat <= 0xFFFF else f"\\U{cat:08X}")
        else:
            out.append(c)
    return "".join(out)


#: A host callback that approves or denies a command: returns (or resolves to) True to run it.
ShellApprover = Callable[[CommandRequest], bool | Awaitable[bool]]


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


@dataclass(frozen=True, slots=True)
class ShellOptions:
    """Host settings for commands: environment names, output limit and timeouts."""

    inherited_environment_names: tuple[str, ...] = ()
    """Host variables passed to allow-listed and approval-gated commands besides the minimal set."""
    model_environment_names: tuple[str, ...] = ()
    """Variables the model may set on allow-listed and approval-gated commands; any other is refused."""
    inherit_secrets: bool = False
    """With an open shell, keep variables whose names look like secrets."""
    output_limit_bytes: int = 10 * 1024
    """Bytes kept per stream; the head and the tail are kept around an elision marker."""
    default_timeout_seconds: float = 30.0
    """Timeout when the call gives none."""
    max_timeout_seconds: float = 600.0
    """The largest timeout a call may ask for."""


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
