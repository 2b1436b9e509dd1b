"""The shell grant: how `execute_terminal_command` may run a line, and every check made before it runs.

A grant is off, an open shell (the line runs in the platform shell), an allow-list (the line is split without a shell
and must start with a listed entry), or any program split without a shell, asked of approvers: host callbacks inside
the tool, or the agent loop's saved approval gate. The line reading lives in `_command_line`, the environments and the
process runner in `_process`; this module holds the policy and composes them.
"""

from __future__ import annotations

import enum
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onellm.capabilities._command_line import (
    ShellSyntaxError,
    entry_lists_git,
    lookup_program,
    program_stem,
    reinterpreter_problem,
    search_path,
    split_command_line,
)
from onellm.capabilities._process import (
    CommandResult,
    minimal_environment,
    open_shell_environment,
    platform_shell_argv,
    replaces_loader,
    run_process,
)
from onellm.capabilities._refusal import denial
from onellm.errors import BadDefinitionError, CapabilityMissingError

__all__ = [
    "CommandDecision",
    "CommandRequest",
    "CommandResult",
    "PreparedCommand",
    "ShellApprover",
    "ShellGrant",
    "ShellMode",
    "ShellOptions",
    "ShellSyntaxError",
    "minimal_environment",
    "program_stem",
    "reinterpreter_problem",
    "run_process",
    "split_command_line",
]


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


_SHELL_WIDTH = {ShellMode.OFF: 0, ShellMode.ALLOW_LIST: 1, ShellMode.ANY_PROGRAM: 2, ShellMode.OPEN: 3}


def _unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    seen: list[Any] = []
    for item in items:
        if not any(item is s or item == s for s in seen):
            seen.append(item)
    return tuple(seen)


def _is_prefix(entry: tuple[str, ...], words: Sequence[str]) -> bool:
    if len(entry) > len(words):
        return False
    if os.name == "nt":
        if program_stem(entry[0]) != program_stem(words[0]):
            return False
    elif entry[0] != words[0]:
        return False
    return tuple(words[1 : len(entry)]) == entry[1:]


def _env_key(name: str) -> str:
    return name.upper() if os.name == "nt" else name


def _join_words(words: Iterable[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    """A command that passed every check and is ready to run (after approval, when the grant asks for it)."""

    argv: tuple[str, ...]
    """What is executed: the program found on PATH and its arguments, or the platform shell and the line."""
    program: str
    """The program as written on the line (the platform shell for an open shell)."""
    args: tuple[str, ...]
    working_directory: str
    environment: Mapping[str, str]
    """The child's whole environment."""
    model_environment: Mapping[str, str]
    """The variables the model set, for display."""
    line: str
    needs_approval: bool
    loop_approval: bool

    @property
    def request(self) -> CommandRequest:
        """What an approver is shown."""
        return CommandRequest(self.program, self.args, self.working_directory, self.line, dict(self.model_environment))


@dataclass(frozen=True, slots=True)
class CommandDecision:
    """What the shell grant says about one command that passed every check, before anything runs.

    `Capabilities.decide_command` returns it. The agent loop asks it for every `execute_terminal_command` call: when
    `hold` is true it saves the call unanswered with a pending approval showing `request`, and runs it (with `approved`
    set in `ToolContext.extra`) only once a person approved it, also after a restart.
    """

    prepared: PreparedCommand
    """The checked command: what would run, where, with which environment."""
    hold: bool
    """The grant holds the call in the agent loop's approval gate until a person approves it (loop approval)."""
    ask: bool
    """Host approvers will be asked inside the tool before it runs."""

    @property
    def request(self) -> CommandRequest:
        """What a person approving the call is shown (`request.display()` for one line)."""
        return self.prepared.request


@dataclass(frozen=True, slots=True)
class ShellGrant:
    """How `execute_terminal_command` may run a line."""

    mode: ShellMode = ShellMode.OFF
    commands: tuple[tuple[str, ...], ...] = ()
    """Allow-list entries, each a program with optional leading arguments (mode `ALLOW_LIST`)."""
    approvers: tuple[ShellApprover, ...] = ()
    """Host callbacks asked for every command; all must approve."""
    loop_approval: bool = False
    """Every command is held in the agent loop's approval gate until a person approves it."""

    # ------------------------------------------------------------------------------------------------ constructors

    @classmethod
    def allow_list(cls, *entries: str) -> ShellGrant:
        """An allow-list grant (off when no entry is given).

        Raises:
            ValueError: an entry is empty or holds shell syntax.
        """
        parsed: list[tuple[str, ...]] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, str):
                raise TypeError(f"shell_commands entry {i} must be a str, not {type(entry).__name__}")
            try:
                words = split_command_line(entry)
            except ShellSyntaxError as exc:
                raise ValueError(f"shell_commands entry {i} ({entry!r}): {exc}") from None
            parsed.append(tuple(words))
        commands = _unique(tuple(parsed))
        if not commands:
            return cls()
        return cls(ShellMode.ALLOW_LIST, commands)

    # -------------------------------------------------------------------------------------------------- the policy

    @property
    def enabled(self) -> bool:
        return self.mode is not ShellMode.OFF

    @property
    def needs_approval(self) -> bool:
        return bool(self.approvers) or self.loop_approval

    @property
    def lists_git(self) -> bool:
        """Whether an allow-list entry can run git (directly, through a launcher or a git front end)."""
        return self.mode is ShellMode.ALLOW_LIST and any(entry_lists_git(e) for e in self.commands)

    def union(self, other: ShellGrant) -> ShellGrant:
        """Either side's commands. An approval on either side applies to the union (it never runs unasked)."""
        if not self.enabled:
            return other
        if not other.enabled:
            return self
        if ShellMode.OPEN in (self.mode, other.mode):
            return ShellGrant(ShellMode.OPEN)
        approvers = _unique(self.approvers + other.approvers)
        loop = self.loop_approval or other.loop_approval
        if ShellMode.ANY_PROGRAM in (self.mode, other.mode):
            return ShellGrant(ShellMode.ANY_PROGRAM, (), approvers, loop)
        return ShellGrant(ShellMode.ALLOW_LIST, _unique(self.commands + other.commands), approvers, loop)

    def intersect(self, other: ShellGrant) -> ShellGrant:
        """The stricter policy: commands both allow, no shell unless both give one, every approver of both asked."""
        if not self.enabled or not other.enabled:
            return ShellGrant()
        approvers = _unique(self.approvers + other.approvers)
        loop = self.loop_approval or other.loop_approval
        width = min(_SHELL_WIDTH[self.mode], _SHELL_WIDTH[other.mode])
        if width == _SHELL_WIDTH[ShellMode.OPEN]:
            if approvers or loop:
                return ShellGrant(ShellMode.ANY_PROGRAM, (), approvers, loop)
            return ShellGrant(ShellMode.OPEN)
        if width == _SHELL_WIDTH[ShellMode.ANY_PROGRAM]:
            return ShellGrant(ShellMode.ANY_PROGRAM, (), approvers, loop)
        if self.mode is ShellMode.ALLOW_LIST and other.mode is ShellMode.ALLOW_LIST:
            both: list[tuple[str, ...]] = []
            for a in self.commands:
                for b in other.commands:
                    if _is_prefix(a, b):
                        both.append(b)
                    elif _is_prefix(b, a):
                        both.append(a)
            commands = _unique(tuple(both))
        else:
            commands = self.commands if self.mode is ShellMode.ALLOW_LIST else other.commands
        if not commands:
            return ShellGrant()
        return ShellGrant(ShellMode.ALLOW_LIST, commands, approvers, loop)

    # -------------------------------------------------------------------------------------------------- the checks

    def parse(self, line: str, *, trusted: Callable[[str], bool] | None = None) -> tuple[str, list[str]]:
        """Check a command line against the grant and split it: `(program, args)` (see `Capabilities.parse_command`).

        `trusted` says whether a PATH directory or program may be run from (see `find_program`).

        Raises:
            CapabilityDeniedError: the shell is off, the line holds shell syntax, it is not on the allow-list, the
                program is not on PATH, or an argument would be re-read as a command.
        """
        if not self.enabled:
            raise denial(f"Command {line!r} is refused: no shell grant.", target=line, rule="shell-off")
        if not isinstance(line, str):
            raise TypeError("a command line is a str")
        if self.mode is ShellMode.OPEN:
            if "\x00" in line:
                raise denial("Command holds a NUL character.", target=line, rule="shell-syntax")
            argv = platform_shell_argv(line)
            return argv[0], argv[1:]
        try:
            words = split_command_line(line)
        except ShellSyntaxError as exc:
            raise denial(
                f"Command {line!r} is refused: {exc} (commands run without a shell; quote plain text).",
                target=line,
                rule="shell-syntax",
            ) from None
        program, args = words[0], words[1:]
        if self.mode is ShellMode.ALLOW_LIST and not any(_is_prefix(e, words) for e in self.commands):
            listed = ", ".join(repr(" ".join(e)) for e in self.commands)
            raise denial(
                f"Command {line!r} is not on the shell allow-list ({listed}).", target=line, rule="not-allow-listed"
            )
        problem = reinterpreter_problem(program, args)
        if problem is not None:
            raise denial(f"Command {line!r} is refused: {problem}.", target=line, rule="reinterpreter")
        self.find_program(program, line, trusted=trusted)
        return program, list(args)

    def find_program(self, program: str, line: str, *, trusted: Callable[[str], bool] | None = None) -> str:
        """The absolute path of the program a split line runs: looked up on PATH only, or an absolute path as written.

        PATH directories `trusted` says no to (those the file tools can write) are not searched, and a program that
        leads into one is passed over: a model that can write a file there could put its own `ls` before the real one.

        Raises:
            CapabilityDeniedError: a relative program path, a path that is not an executable file, or a name not on
                PATH outside the directories the file tools can write.
        """
        if "/" in program or (os.name == "nt" and "\\" in program):
            if not os.path.isabs(program):
                raise denial(
                    f"Command {line!r}: program {program!r} is a relative path; programs are looked up on PATH only.",
                    target=line,
                    rule="program-path",
                )
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                raise denial(
                    f"Command {line!r}: program {program!r} is not an executable file.",
                    target=line,
                    rule="program-path",
                )
            return program
        found = lookup_program(program, trusted=trusted)
        if found is None:
            if trusted is not None and lookup_program(program) is not None:
                raise denial(
                    f"Command {line!r}: program {program!r} is on PATH only in a directory the file tools can write "
                    "(a model could have put it there), so it is not run.",
                    target=line,
                    rule="program-path",
                )
            raise denial(
                f"Command {line!r}: program {program!r} was not found on PATH.", target=line, rule="program-not-found"
            )
        return found

    def prepare(
        self,
        line: str,
        program: str,
        args: Sequence[str],
        *,
        working_directory: str,
        environment: Mapping[str, str] | None,
        options: ShellOptions,
        host_environment: Mapping[str, str] | None,
        trusted: Callable[[str], bool] | None = None,
    ) -> PreparedCommand:
        """A parsed line with its checked working directory: the model's variables checked, the environment built.

        Without an open shell the child's PATH keeps only absolute directories `trusted` accepts, so a program the
        command starts by name (a pager, an editor, a hook's interpreter) is never found in the working directory or
        in a directory the file tools can write.

        Raises:
            CapabilityDeniedError: a variable the model may not set, or one that is not valid text.
        """
        model_env = dict(environment or {})
        host = os.environ if host_environment is None else host_environment
        for name, value in model_env.items():
            if not isinstance(name, str) or not name or "=" in name or "\x00" in name:
                raise denial(f"Environment variable name {name!r} is not valid.", target=name, rule="environment")
            if not isinstance(value, str) or "\x00" in value:
                raise denial(
                    f"Environment variable {name!r} has a value that is not valid text.",
                    target=name,
                    rule="environment",
                )
        if self.mode is ShellMode.OPEN:
            for name in model_env:
                if replaces_loader(name):
                    raise denial(
                        f"Environment variable {name!r} replaces the program search path or loader; it cannot be set.",
                        target=name,
                        rule="environment",
                    )
            env = open_shell_environment(host, inherit_secrets=options.inherit_secrets)
            argv = (program, *args)
        else:
            allowed = {_env_key(n) for n in options.model_environment_names}
            for name in model_env:
                if _env_key(name) not in allowed:
                    raise denial(
                        f"Environment variable {name!r} may not be set by the model (the host has not named it).",
                        target=name,
                        rule="environment",
                    )
            env = minimal_environment(host, options.inherited_environment_names)
            if "PATH" in env:
                env["PATH"] = os.pathsep.join(search_path(env["PATH"], trusted=trusted))
            argv = (self.find_program(program, line, trusted=trusted), *args)
        env.update(model_env)
        return PreparedCommand(
            argv=argv,
            program=program if self.mode is not ShellMode.OPEN else line,
            args=tuple(args) if self.mode is not ShellMode.OPEN else (),
            working_directory=working_directory,
            environment=env,
            model_environment=model_env,
            line=line,
            needs_approval=self.needs_approval,
            loop_approval=self.loop_approval,
        )

    async def approve(self, request: CommandRequest) -> bool:
        """Ask every approver (in order); True only when all approve. True when there are none.

        A plain (non-async) approver runs in a worker thread, so one that prompts at a terminal does not stall the
        event loop.
        """
        import anyio.to_thread

        for approver in self.approvers:
            call = approver if inspect.isfunction(approver) or inspect.ismethod(approver) else type(approver).__call__
            if inspect.iscoroutinefunction(approver) or inspect.iscoroutinefunction(call):
                answer = approver(request)
            else:
                answer = await anyio.to_thread.run_sync(approver, request)
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is not True:
                return False
        return True

    def decide(self, prepared: PreparedCommand) -> CommandDecision:
        """Whether a checked command is held for a person in the agent loop, asked of host approvers, or just run."""
        return CommandDecision(prepared, hold=prepared.loop_approval, ask=bool(self.approvers))

    async def run(
        self,
        prepared: PreparedCommand,
        *,
        approved: bool,
        timeout_seconds: float | None,
        options: ShellOptions,
    ) -> CommandResult:
        """Ask for approval as the grant says, then run a prepared command.

        Raises:
            CapabilityMissingError: the grant holds every command for a person in the agent loop, and this call was
                not approved there (it was run outside an agent run).
            CapabilityDeniedError: an approver said no.
            OSError: the program could not be started (its message names the program as written, not its path).
        """
        line = prepared.line
        if self.decide(prepared).hold and not approved:
            raise CapabilityMissingError(
                f"Command {line!r} was not run: the shell grant holds every command until a person approves it "
                "(Capabilities.shell_with_loop_approval()), and a shell grant with loop approval needs the agent loop, "
                "which holds the call for approval and runs it once approved. Outside an agent run, grant "
                "Capabilities.shell_with_approval(approver) to ask inside the tool, or Capabilities.shell_commands(...)."
            )
        if self.approvers and not await self.approve(prepared.request):
            raise denial(f"Command {line!r} was not approved.", target=line, rule="approval-denied")
        timeout = options.default_timeout_seconds if timeout_seconds is None else float(timeout_seconds)
        if not timeout > 0:  # NaN too
            raise ValueError("timeout_seconds must be positive")
        timeout = min(timeout, options.max_timeout_seconds)
        try:
            return await run_process(
                prepared.argv,
                cwd=prepared.working_directory,
                env=prepared.environment,
                timeout_seconds=timeout,
                output_limit_bytes=options.output_limit_bytes,
            )
        except OSError as exc:
            # The system names the program's path on PATH or the real working directory: host paths. Say which failed.
            where = "in its working directory" if exc.filename == prepared.working_directory else ""
            reason = (exc.strerror or type(exc).__name__).lower()
            raise OSError(f"could not start {prepared.program!r}{' ' + where if where else ''}: {reason}") from exc

    # ------------------------------------------------------------------------------------------------ persistence

    def to_data(self) -> dict[str, Any]:
        """The `shell` part of the saved summary: `enabled`, `approval`, and `commands` for an allow-list."""
        shell: dict[str, Any] = {"enabled": self.enabled, "approval": self.needs_approval}
        if self.mode is ShellMode.ALLOW_LIST:
            shell["commands"] = [_join_words(e) for e in self.commands]
        return shell

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str) -> ShellGrant:
        """Rebuild the grant from its saved part. Approval without an approver becomes the loop gate.

        Raises:
            BadDefinitionError: the part is not well formed (the path names the key).
        """
        if not _bool(data.get("enabled", False), f"{path}.enabled"):
            return cls()
        approval = _bool(data.get("approval", False), f"{path}.approval")
        commands = data.get("commands")
        if commands is not None:
            lines = _str_list(commands, f"{path}.commands")
            try:
                listed = cls.allow_list(*lines)
            except ValueError as exc:
                raise BadDefinitionError(str(exc), path=f"{path}.commands") from None
            if approval and listed.enabled:
                listed = cls(listed.mode, listed.commands, listed.approvers, True)
            return listed
        if approval:
            return cls(ShellMode.ANY_PROGRAM, (), (), True)
        return cls(ShellMode.OPEN)


def _str_list(value: object, path: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadDefinitionError("expected a list of strings", path=path)
    return list(value)


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise BadDefinitionError("expected true or false", path=path)
    return value
