"""`Capabilities`: what the host lets tools touch (files, shell, network), and every check the built-in tools make.

See `docs/capabilities.md` for the rules in prose. The checks here are the single place they are implemented: the file
tools call `resolve_read`/`resolve_write` and open files through `open_read`/`open_write`; the terminal tool calls
`prepare_command` and `run_command`; network tools go through `EgressClient`, which asks `allows_connection`.
"""

from __future__ import annotations

import errno
import inspect
import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from onellm.capabilities._network import NetworkEntry, NetworkGrant
from onellm.capabilities._paths import (
    CONTROL_NAMES,
    GIT_DIR_MARKERS,
    GIT_ROLE_DIRS,
    GIT_ROLE_FILES,
    STATE_DIR_NAME,
    SymlinkLoopError,
    component_key,
    current_flavor,
    fd_real_path,
    foreign_drive_problem,
    is_within,
    name_key,
    path_key,
    resolve_real,
    short_alias_problem,
    split_components,
    windows_form_problem,
)
from onellm.capabilities._shell import (
    CommandRequest,
    CommandResult,
    ShellApprover,
    ShellMode,
    ShellOptions,
    ShellSyntaxError,
    entry_lists_git,
    lookup_program,
    minimal_environment,
    open_shell_environment,
    platform_shell_argv,
    program_stem,
    reinterpreter_problem,
    replaces_loader,
    run_process,
    split_command_line,
)
from onellm.errors import BadDefinitionError, CapabilityDeniedError

__all__ = ["Capabilities", "PreparedCommand", "ShellGrant"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_DIR_FD = os.open in os.supports_dir_fd and os.name != "nt"
# Walking by directory descriptor: entries listed, opened and stat'ed relative to a verified directory.
_WALK_FD = (
    _DIR_FD
    and bool(_O_NOFOLLOW)
    and bool(_O_DIRECTORY)
    and os.scandir in os.supports_fd
    and os.stat in os.supports_dir_fd
)

_SHELL_WIDTH = {ShellMode.OFF: 0, ShellMode.ALLOW_LIST: 1, ShellMode.ANY_PROGRAM: 2, ShellMode.OPEN: 3}


def _deny(message: str, target: object, rule: str) -> CapabilityDeniedError:
    return denial(message, target=str(target), rule=rule)


def denial(message: str, *, target: str, rule: str) -> CapabilityDeniedError:
    """A refusal that names its target in the message and its rule both in the message and in `rule`."""
    return CapabilityDeniedError(f"{message} (rule: {rule})", target=target, rule=rule)


def _is_prefix(entry: tuple[str, ...], words: Sequence[str]) -> bool:
    if len(entry) > len(words):
        return False
    if os.name == "nt":
        if program_stem(entry[0]) != program_stem(words[0]):
            return False
    elif entry[0] != words[0]:
        return False
    return tuple(words[1 : len(entry)]) == entry[1:]


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

    @property
    def enabled(self) -> bool:
        return self.mode is not ShellMode.OFF

    @property
    def needs_approval(self) -> bool:
        return bool(self.approvers) or self.loop_approval

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


def _unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    seen: list[Any] = []
    for item in items:
        if not any(item is s or item == s for s in seen):
            seen.append(item)
    return tuple(seen)


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
class Capabilities:
    """An immutable set of grants: file roots, a shell policy and a network policy, plus write protections.

    Build it with the class methods and combine with `+` (union) and `intersect` (what a sub-agent gets). A value
    made with the plain constructor grants nothing.
    """

    read_roots: tuple[Path, ...] = ()
    """Directories tools may read below (real paths). Write roots are readable too."""
    write_roots: tuple[Path, ...] = ()
    """Directories tools may write below (real paths)."""
    working_directory: Path | None = None
    """Where relative paths and commands start; the process's working directory when None."""
    shell_grant: ShellGrant = field(default_factory=ShellGrant)
    network_grant: NetworkGrant = field(default_factory=NetworkGrant)
    protected_paths: tuple[Path, ...] = ()
    """Neither readable nor writable by the file tools: the runtime's state (`.onellm` under every root, stores, sinks)."""
    git_ceiling: bool = False
    """The git role rule is armed: git configuration, pointer and hook files are refused to writers."""
    repo_control_writes: bool = False
    """The host lifted the repository-control and git rules."""

    # ----------------------------------------------------------------------------------------------- constructors

    @classmethod
    def none(cls) -> Capabilities:
        """No grants at all."""
        return cls()

    @classmethod
    def default(cls) -> Capabilities:
        """The default grant: read and write under the working directory; no shell, no network."""
        return cls.files()

    @classmethod
    def files(cls, *roots: str | os.PathLike[str]) -> Capabilities:
        """Read and write below each root (the working directory when none is given). `.onellm` there is protected."""
        real = _roots(roots or (os.getcwd(),))
        return cls(read_roots=real, write_roots=real, protected_paths=_state_dirs(real))

    @classmethod
    def read_only_files(cls, *roots: str | os.PathLike[str]) -> Capabilities:
        """Read below each root. `.onellm` there is protected too."""
        real = _roots(roots or (os.getcwd(),))
        return cls(read_roots=real, protected_paths=_state_dirs(real))

    @classmethod
    def shell(cls) -> Capabilities:
        """An open shell: each line runs in the platform shell, with the host environment minus secret-looking names."""
        return cls(shell_grant=ShellGrant(ShellMode.OPEN))

    @classmethod
    def shell_commands(cls, *entries: str) -> Capabilities:
        """An allow-list: each entry is a program, or a program with leading arguments that then must come first.

        Lines are split without a shell and shell syntax is refused. An entry that can run git (directly, through a
        launcher or a git front end) arms the git role rule for these grants and everything combined with them.

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
        git = any(entry_lists_git(e) for e in commands)
        return cls(shell_grant=ShellGrant(ShellMode.ALLOW_LIST, commands), git_ceiling=git)

    @classmethod
    def shell_with_approval(cls, approver: ShellApprover) -> Capabilities:
        """Any program (split without a shell), each command approved by `approver` inside the tool."""
        if not callable(approver):
            raise TypeError("shell_with_approval needs a callable approver")
        return cls(shell_grant=ShellGrant(ShellMode.ANY_PROGRAM, (), (approver,)))

    @classmethod
    def shell_with_loop_approval(cls) -> Capabilities:
        """Any program (split without a shell), each command held in the agent loop until a person approves it."""
        return cls(shell_grant=ShellGrant(ShellMode.ANY_PROGRAM, (), (), True))

    @classmethod
    def network(cls, *entries: str) -> Capabilities:
        """Connections to the hosts named: `host`, `*.suffix`, `host:port`, an address or CIDR range, `localhost`.

        Raises:
            ValueError: an entry is not one of those forms.
        """
        parsed = frozenset(NetworkEntry.parse(e) for e in entries)
        return cls(network_grant=NetworkGrant(False, parsed))

    @classmethod
    def any_public_hosts(cls) -> Capabilities:
        """Connections to every public host; loopback, private and link-local addresses stay refused."""
        return cls(network_grant=NetworkGrant(True))

    # -------------------------------------------------------------------------------------------------- combining

    def __add__(self, other: Capabilities) -> Capabilities:
        if not isinstance(other, Capabilities):
            return NotImplemented
        return Capabilities(
            read_roots=_unique(self.read_roots + other.read_roots),
            write_roots=_unique(self.write_roots + other.write_roots),
            working_directory=self.working_directory or other.working_directory,
            shell_grant=self.shell_grant.union(other.shell_grant),
            network_grant=self.network_grant.union(other.network_grant),
            protected_paths=_unique(self.protected_paths + other.protected_paths),
            git_ceiling=self.git_ceiling or other.git_ceiling,
            repo_control_writes=self.repo_control_writes or other.repo_control_writes,
        )

    def __radd__(self, other: object) -> Capabilities:
        # Lets `sum(grants, Capabilities())` and `sum(grants)` work: the 0 that `sum` starts from adds nothing.
        if other == 0:
            return self
        return NotImplemented

    def intersect(self, other: Capabilities) -> Capabilities:
        """What a sub-agent gets: never wider than either side; write protections of both sides apply."""
        if not isinstance(other, Capabilities):
            raise TypeError("intersect takes a Capabilities")
        return Capabilities(
            read_roots=_intersect_roots(self._readable_roots(), other._readable_roots()),
            write_roots=_intersect_roots(self.write_roots, other.write_roots),
            working_directory=self.working_directory or other.working_directory,
            shell_grant=self.shell_grant.intersect(other.shell_grant),
            network_grant=self.network_grant.intersect(other.network_grant),
            protected_paths=_unique(self.protected_paths + other.protected_paths),
            git_ceiling=self.git_ceiling or other.git_ceiling,
            repo_control_writes=self.repo_control_writes and other.repo_control_writes,
        )

    def with_git_ceiling(self) -> Capabilities:
        """Arm the git role rule although no listed program is known to run git."""
        return replace(self, git_ceiling=True)

    def with_repo_control_writes(self) -> Capabilities:
        """Allow writes to repository control paths, git directories and git role files (trusting the model)."""
        return replace(self, repo_control_writes=True)

    def with_protected_paths(self, *paths: str | os.PathLike[str]) -> Capabilities:
        """Add paths the file tools can neither read nor write (store and sink directories, for example)."""
        return replace(self, protected_paths=_unique(self.protected_paths + _roots(paths)))

    def with_working_directory(self, path: str | os.PathLike[str]) -> Capabilities:
        """Where relative paths and commands start."""
        return replace(self, working_directory=Path(resolve_real(path, os.getcwd())))

    # ------------------------------------------------------------------------------------------------------ files

    @property
    def has_file_read(self) -> bool:
        return bool(self.read_roots or self.write_roots)

    @property
    def has_file_write(self) -> bool:
        return bool(self.write_roots)

    def _readable_roots(self) -> tuple[Path, ...]:
        return _unique(self.read_roots + self.write_roots)

    def _base(self, base: str | os.PathLike[str] | None) -> str:
        if base is not None:
            return os.fspath(base)
        return os.fspath(self.working_directory) if self.working_directory is not None else os.getcwd()

    def _resolve(self, path: str | os.PathLike[str], base: str | os.PathLike[str] | None) -> str:
        text = os.fspath(path)
        if not isinstance(text, str):
            raise TypeError("paths must be text, not bytes")
        if "\x00" in text:
            raise _deny(f"Path {text!r} contains a NUL character.", text, "bad-path")
        if text == "":
            raise _deny("An empty path names nothing.", text, "bad-path")
        if os.name == "nt":
            problem = windows_form_problem(text)
            if problem is not None:
                raise _deny(f"Path {text!r} is refused: {problem}.", text, "windows-form")
            foreign = foreign_drive_problem(text, self._base(base), [os.fspath(r) for r in self._readable_roots()])
            if foreign is not None:
                raise _deny(f"Path {text!r} is {foreign}.", text, "outside-roots")
        try:
            return resolve_real(text, self._base(base))
        except SymlinkLoopError:
            raise _deny(f"Path {text!r} holds a symbolic link loop.", text, "symlink-loop") from None

    def _check_resolved(
        self, text: str, resolved: str, *, write: bool, base: str | os.PathLike[str] | None = None
    ) -> None:
        flavor = current_flavor()
        roots = self.write_roots if write else self._readable_roots()
        if not roots:
            kind = "write" if write else "read"
            raise _deny(f"Path {text!r} is refused: no file {kind} grant.", text, f"no-file-{kind}")
        root = next((r for r in roots if is_within(resolved, os.fspath(r), flavor)), None)
        if root is None:
            if write and any(is_within(resolved, os.fspath(r), flavor) for r in self._readable_roots()):
                raise _deny(f"Path {text!r} ({resolved}) is under a read-only root.", text, "read-only")
            listed = ", ".join(os.fspath(r) for r in roots)
            kind = "write" if write else "read"
            raise _deny(f"Path {text!r} ({resolved}) is outside the {kind} roots ({listed}).", text, "outside-roots")
        alias = short_alias_problem(resolved, os.fspath(root))
        if alias is not None:
            raise _deny(f"Path {text!r} is refused: {alias}.", text, "short-name")
        # The path as written counts too, so a state directory replaced by a link stays out of reach by its name.
        written = os.path.normpath(os.path.join(self._base(base), text))
        for protected in self.protected_paths:
            if is_within(resolved, os.fspath(protected), flavor) or is_within(written, os.fspath(protected), flavor):
                raise _deny(
                    f"Path {text!r} ({resolved}) is inside the runtime's protected state ({protected}).",
                    text,
                    "protected-state",
                )
        if write and not self.repo_control_writes:
            self._check_repository_rules(text, resolved, base, root)

    def _check_repository_rules(
        self, text: str, resolved: str, base: str | os.PathLike[str] | None, root: Path
    ) -> None:
        _, names = split_components(resolved, current_flavor())
        # The names as written count too: a control name that a link or `..` would hide is still refused.
        _, written = split_components(os.path.join(self._base(base), text), current_flavor())
        for name in (*names, *written):
            if name_key(name) in CONTROL_NAMES:
                raise _deny(
                    f"Path {text!r} ({resolved}) is a repository control path ({name!r}); tools may not write there.",
                    text,
                    "repo-control",
                )
        self._check_git_directories(text, resolved)
        if self.git_ceiling and names:
            # Both spellings count: the real one, and the one written (a link named `config` is read by git).
            finals = (names[-1], *written[-1:])
            for final in finals:
                if name_key(final) in GIT_ROLE_FILES:
                    raise _deny(
                        f"Path {text!r} ({resolved}): a file named {final!r} is refused while git can run "
                        "(git is on the shell allow-list, or the grants carry the git ceiling).",
                        text,
                        "git-role",
                    )
            # Directories above the root do not count here (a root under `~/info/` stays usable); those that are git
            # directories or control directories are caught by the rules above.
            _, root_names = split_components(os.fspath(root), current_flavor())
            for name in names[len(root_names) : -1]:
                if name_key(name) in GIT_ROLE_DIRS:
                    raise _deny(
                        f"Path {text!r} ({resolved}) is under a directory named {name!r}, refused while git can run "
                        "(git is on the shell allow-list, or the grants carry the git ceiling).",
                        text,
                        "git-role",
                    )

    def check_planned_writes(
        self, targets: Iterable[str | os.PathLike[str]], written: Iterable[str | os.PathLike[str]]
    ) -> None:
        """Refuse a set of writes that, taken together, would make a directory look like a git directory.

        Each write is checked on its own against the disk (`resolve_write`), where the others of the set are not yet:
        a patch that adds `HEAD`, `objects/` and `refs/` at once would pass those checks one by one, and plant a
        repository (with a `config` or a hook for git to run) in one step. Here the files in `written` count as
        present; `targets` (the resolved paths the set touches, `written` among them) are refused when one of their
        directories would then hold all three. Nothing is refused when the grant allows repository-control writes.

        Raises:
            CapabilityDeniedError: rule `git-directory`.
        """
        if self.repo_control_writes:
            return
        markers = {name_key(m): m for m in GIT_DIR_MARKERS}
        planned: dict[Path, set[str]] = {}
        for item in written:
            path = Path(item)
            child = path
            for parent in path.parents:
                key = name_key(child.name)
                if key in markers:
                    planned.setdefault(parent, set()).add(key)
                child = parent
        for item in targets:
            target = Path(item)
            for directory in target.parents:
                present = set(planned.get(directory, ()))
                present.update(key for key, marker in markers.items() if os.path.lexists(directory / marker))
                if len(present) == len(markers):
                    raise _deny(
                        f"{target} would be in a git directory ({directory}): together with the other files of this "
                        "set it holds HEAD, objects and refs; tools may not write there. Nothing was written.",
                        str(target),
                        "git-directory",
                    )

    def _check_git_directories(self, text: str, resolved: str) -> None:
        """Refuse a write in a git directory (HEAD, objects and refs present), or one that would complete the set."""
        current = resolved
        child: str | None = None
        while True:
            if child is not None:
                child_key = name_key(child)
                # Short-circuits on the first missing marker, so most directories cost one lookup.
                complete = all(
                    child_key == name_key(marker) or os.path.lexists(os.path.join(current, marker))
                    for marker in GIT_DIR_MARKERS
                )
                if complete:
                    raise _deny(
                        f"Path {text!r} ({resolved}) is in a git directory ({current}); tools may not write there.",
                        text,
                        "git-directory",
                    )
            parent, name = os.path.split(current)
            if not name or parent == current:
                break
            child = name
            current = parent

    def resolve_read(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """The real path of `path` if tools may read it.

        Raises:
            CapabilityDeniedError: outside the read roots, inside protected state, a symlink loop, or a refused form.
        """
        text = os.fspath(path)
        resolved = self._resolve(path, base)
        self._check_resolved(text, resolved, write=False, base=base)
        return Path(resolved)

    def resolve_write(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """The real path of `path` (resolved through its deepest existing ancestor) if tools may write it.

        Raises:
            CapabilityDeniedError: outside the write roots, inside protected state, a repository control path, a git
                directory, a git role file while git can run, a symlink loop, or a refused form.
        """
        text = os.fspath(path)
        resolved = self._resolve(path, base)
        self._check_resolved(text, resolved, write=True, base=base)
        return Path(resolved)

    def is_readable(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> bool:
        """`resolve_read` as a yes/no answer (listings use it to leave protected entries out)."""
        try:
            self.resolve_read(path, base=base)
        except CapabilityDeniedError:
            return False
        return True

    def is_writable(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> bool:
        """`resolve_write` as a yes/no answer."""
        try:
            self.resolve_write(path, base=base)
        except CapabilityDeniedError:
            return False
        return True

    def _open_verified(
        self, path: str | os.PathLike[str], base: str | os.PathLike[str] | None, *, write: bool, flags: int
    ) -> tuple[int, str]:
        """Resolve, open, then resolve again and compare: a link swapped in between is refused before any I/O."""
        text = os.fspath(path)
        first = self._resolve(path, base)
        self._check_resolved(text, first, write=write, base=base)
        parent, name = os.path.split(first)
        flags |= _O_CLOEXEC | _O_BINARY
        try:
            if _DIR_FD and name:
                dfd = self._open_directory_verified(text, parent)
                try:
                    fd = os.open(name, flags | _O_NOFOLLOW, 0o666, dir_fd=dfd)
                finally:
                    os.close(dfd)
            else:
                fd = os.open(first, flags | _O_NOFOLLOW, 0o666)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and _O_NOFOLLOW):
                raise _swapped(text) from None
            raise
        try:
            self._verify_fd(fd, text, first, base, write=write)
        except BaseException:
            os.close(fd)
            raise
        return fd, first

    def _open_directory_verified(self, text: str, directory: str) -> int:
        dfd = os.open(directory, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            real = fd_real_path(dfd)
            if real is not None:
                if real != directory:
                    raise _swapped(text)
            else:
                st = os.fstat(dfd)
                again = resolve_real(directory, "/")
                st2 = os.stat(again)
                if again != directory or (st.st_dev, st.st_ino) != (st2.st_dev, st2.st_ino):
                    raise _swapped(text)
        except BaseException:
            os.close(dfd)
            raise
        return dfd

    def _verify_fd(self, fd: int, text: str, first: str, base: str | os.PathLike[str] | None, *, write: bool) -> None:
        second = self._resolve(text, base)
        self._check_resolved(text, second, write=write, base=base)
        if second != first:
            raise _swapped(text)
        real = fd_real_path(fd)
        if real is not None and real != first:
            raise _swapped(text)
        try:
            st_path = os.stat(first, follow_symlinks=False)
        except OSError:
            raise _swapped(text) from None
        st_fd = os.fstat(fd)
        if (st_fd.st_dev, st_fd.st_ino) != (st_path.st_dev, st_path.st_ino):
            raise _swapped(text)

    def open_directory(
        self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None
    ) -> DirectoryHandle:
        """Open a directory tools may read, to walk what it holds by name (`DirectoryHandle`). The caller closes it
        (or uses it as a context manager).

        Raises:
            CapabilityDeniedError: as `resolve_read`, or when the directory changed between the check and the open.
            NotADirectoryError: the path is not a directory.
        """
        text = os.fspath(path)
        resolved = self._resolve(path, base)
        self._check_resolved(text, resolved, write=False, base=base)
        if not _WALK_FD:
            if not os.path.isdir(resolved):
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", resolved)
            return DirectoryHandle(self, resolved, None)
        try:
            dfd = self._open_directory_verified(text, resolved)
        except NotADirectoryError:
            raise
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", resolved) from None
            raise
        return DirectoryHandle(self, resolved, dfd)

    def open_read(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> IO[bytes]:
        """Open a regular file for reading through the double check. The caller closes it.

        Raises:
            CapabilityDeniedError: as `resolve_read`, or when the path changed between the check and the open.
            IsADirectoryError: the path is a directory. OSError: for anything else that is not a regular file.
        """
        fd, resolved = self._open_verified(path, base, write=False, flags=os.O_RDONLY | _O_NONBLOCK)
        return _regular_file(fd, resolved)

    def open_write(
        self,
        path: str | os.PathLike[str],
        *,
        base: str | os.PathLike[str] | None = None,
        append: bool = False,
        exclusive: bool = False,
        make_parents: bool = False,
    ) -> IO[bytes]:
        """Open a file for writing through the double check; it is truncated only after the check passes.

        `append` writes at the end instead of truncating; `exclusive` fails if the file exists; `make_parents`
        creates missing directories first (each one checked).

        Raises:
            CapabilityDeniedError: as `resolve_write`, or when the path changed between the check and the open.
        """
        if make_parents:
            target = self.resolve_write(path, base=base)
            self.make_directories(target.parent)
        flags = os.O_WRONLY | os.O_CREAT | _O_NONBLOCK
        if exclusive:
            flags |= os.O_EXCL
        if append:
            flags |= os.O_APPEND
        fd, resolved = self._open_verified(path, base, write=True, flags=flags)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "Not a regular file", resolved)
            if not append:
                os.ftruncate(fd, 0)
            _clear_nonblock(fd)
            return os.fdopen(fd, "ab" if append else "wb")
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(
        self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None, max_bytes: int | None = None
    ) -> bytes:
        """Read a whole file through the double check; with `max_bytes`, at most that many bytes."""
        with self.open_read(path, base=base) as handle:
            return handle.read() if max_bytes is None else handle.read(max_bytes)

    def write_bytes(
        self,
        path: str | os.PathLike[str],
        data: bytes,
        *,
        base: str | os.PathLike[str] | None = None,
        make_parents: bool = True,
    ) -> Path:
        """Write a whole file through the double check (creating missing directories). Returns the real path."""
        with self.open_write(path, base=base, make_parents=make_parents) as handle:
            handle.write(data)
        return self.resolve_write(path, base=base)

    def make_directories(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """Create a directory and its missing parents, each checked as a write and created in a verified parent."""
        text = os.fspath(path)
        target = self.resolve_write(path, base=base)
        missing: list[str] = []
        current = os.fspath(target)
        while not os.path.lexists(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for directory in reversed(missing):
            self._check_resolved(text, directory, write=True, base=base)
            parent, name = os.path.split(directory)
            try:
                if _DIR_FD:
                    dfd = self._open_directory_verified(text, parent)
                    try:
                        os.mkdir(name, 0o777, dir_fd=dfd)
                    finally:
                        os.close(dfd)
                else:
                    os.mkdir(directory)
            except FileExistsError:
                pass
            st = os.stat(directory, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                raise _swapped(text)
        again = self.resolve_write(path, base=base)
        if again != target:
            raise _swapped(text)
        return target

    def remove_file(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """Delete one directory entry: a link itself, never its target. The entry's directory is resolved and checked
        as a write, and the entry is removed relative to a verified handle on that directory."""
        text = os.fspath(path)
        joined = os.path.join(self._base(base), text)
        parent_text, name = os.path.split(joined)
        if name in ("", ".", ".."):
            raise _deny(f"Path {text!r} does not name a file.", text, "bad-path")
        parent = self._resolve(parent_text, base)
        target = os.path.join(parent, name)
        self._check_resolved(text, target, write=True, base=base)
        if _DIR_FD:
            dfd = self._open_directory_verified(text, parent)
            try:
                os.unlink(name, dir_fd=dfd)
            finally:
                os.close(dfd)
        else:
            os.unlink(target)
        return Path(target)

    # ------------------------------------------------------------------------------------------------------ shell

    @property
    def shell_enabled(self) -> bool:
        return self.shell_grant.enabled

    def parse_command(self, line: str) -> tuple[str, list[str]]:
        """Check a command line against the shell grant and split it: `(program, args)`.

        With an open shell the program is the platform shell and the arguments run the line. Otherwise the line is
        split without a shell, must match the allow-list (if there is one), and the program must be found on PATH.

        Raises:
            CapabilityDeniedError: the shell is off, the line holds shell syntax, it is not on the allow-list, the
                program is not on PATH, or an argument would be re-read as a command.
        """
        grant = self.shell_grant
        if not grant.enabled:
            raise _deny(f"Command {line!r} is refused: no shell grant.", line, "shell-off")
        if not isinstance(line, str):
            raise TypeError("a command line is a str")
        if grant.mode is ShellMode.OPEN:
            if "\x00" in line:
                raise _deny("Command holds a NUL character.", line, "shell-syntax")
            argv = platform_shell_argv(line)
            return argv[0], argv[1:]
        try:
            words = split_command_line(line)
        except ShellSyntaxError as exc:
            raise _deny(
                f"Command {line!r} is refused: {exc} (commands run without a shell; quote plain text).",
                line,
                "shell-syntax",
            ) from None
        program, args = words[0], words[1:]
        if grant.mode is ShellMode.ALLOW_LIST and not any(_is_prefix(e, words) for e in grant.commands):
            listed = ", ".join(repr(" ".join(e)) for e in grant.commands)
            raise _deny(f"Command {line!r} is not on the shell allow-list ({listed}).", line, "not-allow-listed")
        problem = reinterpreter_problem(program, args)
        if problem is not None:
            raise _deny(f"Command {line!r} is refused: {problem}.", line, "reinterpreter")
        self._find_program(program, line)
        return program, list(args)

    def _find_program(self, program: str, line: str) -> str:
        if "/" in program or (os.name == "nt" and "\\" in program):
            if not os.path.isabs(program):
                raise _deny(
                    f"Command {line!r}: program {program!r} is a relative path; programs are looked up on PATH only.",
                    line,
                    "program-path",
                )
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                raise _deny(f"Command {line!r}: program {program!r} is not an executable file.", line, "program-path")
            return program
        found = lookup_program(program)
        if found is None:
            raise _deny(f"Command {line!r}: program {program!r} was not found on PATH.", line, "program-not-found")
        return found

    def prepare_command(
        self,
        line: str,
        *,
        working_directory: str | os.PathLike[str] | None = None,
        environment: Mapping[str, str] | None = None,
        options: ShellOptions | None = None,
        host_environment: Mapping[str, str] | None = None,
    ) -> PreparedCommand:
        """Every check for one command: the line, the working directory (read access), the model's variables.

        Raises:
            CapabilityDeniedError: any check failed; nothing has run.
        """
        options = options or ShellOptions()
        program, args = self.parse_command(line)
        grant = self.shell_grant
        cwd_text = os.fspath(working_directory) if working_directory is not None else self._base(None)
        cwd = self.resolve_read(cwd_text)
        if not cwd.is_dir():
            raise _deny(f"Working directory {cwd_text!r} is not a directory.", cwd_text, "working-directory")
        model_env = dict(environment or {})
        host = os.environ if host_environment is None else host_environment
        for name, value in model_env.items():
            if not isinstance(name, str) or not name or "=" in name or "\x00" in name:
                raise _deny(f"Environment variable name {name!r} is not valid.", name, "environment")
            if not isinstance(value, str) or "\x00" in value:
                raise _deny(f"Environment variable {name!r} has a value that is not valid text.", name, "environment")
        if grant.mode is ShellMode.OPEN:
            for name in model_env:
                if replaces_loader(name):
                    raise _deny(
                        f"Environment variable {name!r} replaces the program search path or loader; it cannot be set.",
                        name,
                        "environment",
                    )
            env = open_shell_environment(host, inherit_secrets=options.inherit_secrets)
            argv = (program, *args)
        else:
            allowed = {_env_key(n) for n in options.model_environment_names}
            for name in model_env:
                if _env_key(name) not in allowed:
                    raise _deny(
                        f"Environment variable {name!r} may not be set by the model (the host has not named it).",
                        name,
                        "environment",
                    )
            env = minimal_environment(host, options.inherited_environment_names)
            argv = (self._find_program(program, line), *args)
        env.update(model_env)
        return PreparedCommand(
            argv=argv,
            program=program if grant.mode is not ShellMode.OPEN else line,
            args=tuple(args) if grant.mode is not ShellMode.OPEN else (),
            working_directory=os.fspath(cwd),
            environment=env,
            model_environment=model_env,
            line=line,
            needs_approval=grant.needs_approval,
            loop_approval=grant.loop_approval,
        )

    async def approve(self, request: CommandRequest) -> bool:
        """Ask every approver of the grant (in order); True only when all approve. True when there are none.

        A plain (non-async) approver runs in a worker thread, so one that prompts at a terminal does not stall the
        event loop.
        """
        import anyio.to_thread

        for approver in self.shell_grant.approvers:
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

    async def run_command(
        self,
        line: str,
        *,
        working_directory: str | os.PathLike[str] | None = None,
        environment: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
        options: ShellOptions | None = None,
        approved: bool = False,
    ) -> CommandResult:
        """Check, approve and run one command; the process runner behind `execute_terminal_command`.

        `approved=True` says the agent loop's approval gate already approved this call (loop approval); host
        approvers are asked here either way.

        Raises:
            CapabilityDeniedError: a check failed, an approver said no, or the loop gate has not approved the call.
        """
        options = options or ShellOptions()
        prepared = self.prepare_command(
            line, working_directory=working_directory, environment=environment, options=options
        )
        if prepared.loop_approval and not approved:
            raise _deny(f"Command {line!r} waits for approval in the agent loop.", line, "approval-required")
        if self.shell_grant.approvers and not await self.approve(prepared.request):
            raise _deny(f"Command {line!r} was not approved.", line, "approval-denied")
        timeout = options.default_timeout_seconds if timeout_seconds is None else float(timeout_seconds)
        if timeout <= 0:
            raise ValueError("timeout_seconds must be positive")
        timeout = min(timeout, options.max_timeout_seconds)
        return await run_process(
            prepared.argv,
            cwd=prepared.working_directory,
            env=prepared.environment,
            timeout_seconds=timeout,
            output_limit_bytes=options.output_limit_bytes,
        )

    # ---------------------------------------------------------------------------------------------------- network

    @property
    def network_enabled(self) -> bool:
        return self.network_grant.enabled

    def allows_host(self, host: str, port: int) -> bool:
        """The check before a request is sent: may some address of `host:port` be reached?"""
        try:
            return self.network_grant.allows_host(host, port)
        except ValueError:
            return False

    def allows_connection(self, host: str, port: int, address: str) -> bool:
        """The check made when a connection opens: `host` from the URL, `address` the one about to be dialled."""
        return self.network_grant.allows_connection(host, port, address)

    # ------------------------------------------------------------------------------------------------ persistence

    def to_data(self) -> dict[str, Any]:
        """The grant summary saved with an instance (`capabilities`): roots, working directory, shell, network."""
        shell: dict[str, Any] = {
            "enabled": self.shell_grant.enabled,
            "approval": self.shell_grant.needs_approval,
        }
        if self.shell_grant.mode is ShellMode.ALLOW_LIST:
            shell["commands"] = [_join_words(e) for e in self.shell_grant.commands]
        return {
            "readRoots": [os.fspath(r) for r in self._readable_roots()],
            "writeRoots": [os.fspath(r) for r in self.write_roots],
            "workingDirectory": os.fspath(self.working_directory) if self.working_directory else None,
            "shell": shell,
            "network": {
                "anyPublic": self.network_grant.any_public,
                "hosts": sorted(str(e) for e in self.network_grant.entries),
            },
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, path: str = "capabilities") -> Capabilities:
        """Rebuild grants from a saved summary. Approval without an approver becomes the loop gate.

        Raises:
            BadDefinitionError: the summary is not well formed (the path names the key).
        """
        if not isinstance(data, Mapping):
            raise BadDefinitionError("capabilities must be a mapping", path=path)
        read = _str_list(data.get("readRoots", []), f"{path}.readRoots")
        write = _str_list(data.get("writeRoots", []), f"{path}.writeRoots")
        wd = data.get("workingDirectory")
        if wd is not None and not isinstance(wd, str):
            raise BadDefinitionError("workingDirectory must be a string", path=f"{path}.workingDirectory")
        shell = data.get("shell", {}) or {}
        if not isinstance(shell, Mapping):
            raise BadDefinitionError("shell must be a mapping", path=f"{path}.shell")
        network = data.get("network", {}) or {}
        if not isinstance(network, Mapping):
            raise BadDefinitionError("network must be a mapping", path=f"{path}.network")
        write_real = _roots(write)
        read_real = _unique(_roots(read) + write_real)
        caps = cls(read_roots=read_real, write_roots=write_real, protected_paths=_state_dirs(read_real))
        if wd:
            caps = replace(caps, working_directory=Path(wd))
        if _bool(shell.get("enabled", False), f"{path}.shell.enabled"):
            approval = _bool(shell.get("approval", False), f"{path}.shell.approval")
            commands = shell.get("commands")
            if commands is not None:
                lines = _str_list(commands, f"{path}.shell.commands")
                try:
                    part = cls.shell_commands(*lines)
                except ValueError as exc:
                    raise BadDefinitionError(str(exc), path=f"{path}.shell.commands") from None
                if approval:
                    part = replace(part, shell_grant=replace(part.shell_grant, loop_approval=True))
            elif approval:
                part = cls.shell_with_loop_approval()
            else:
                part = cls.shell()
            caps = caps + part
        hosts = _str_list(network.get("hosts", []), f"{path}.network.hosts")
        try:
            caps = caps + cls.network(*hosts)
        except ValueError as exc:
            raise BadDefinitionError(str(exc), path=f"{path}.network.hosts") from None
        if _bool(network.get("anyPublic", False), f"{path}.network.anyPublic"):
            caps = caps + cls.any_public_hosts()
        return caps


class DirectoryHandle:
    """A directory tools may read, held open so that what it holds is listed, checked and opened by name.

    `Capabilities.open_directory` checks the directory once, as `resolve_read` does, and opens it; the entries are then
    listed from the open directory and opened relative to it without following a link in their last component, so an
    entry swapped for a symbolic link after it was listed is refused rather than followed, and nothing below the
    directory needs resolving again. Below a readable directory the only rule that can refuse an entry that is not a
    link is the protected state, which `allows` checks without touching the disk. Symbolic links themselves are not
    opened here: follow them with `Capabilities.open_read`, which resolves and checks the target.

    Where the platform cannot open files relative to a directory, every method falls back to the full checks of
    `Capabilities` on the joined path.
    """

    __slots__ = ("_blocked", "_caps", "_fd", "path")

    def __init__(self, caps: Capabilities, path: str, fd: int | None) -> None:
        self._caps = caps
        self._fd = fd
        self.path = path
        """The directory's real path."""
        self._blocked: frozenset[str] | None = None

    def __enter__(self) -> DirectoryHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _child(self, name: str) -> str:
        if not name or name in (".", "..") or "/" in name or (os.altsep and os.altsep in name) or os.sep in name:
            raise ValueError(f"{name!r} is not the name of a directory entry")
        return os.path.join(self.path, name)

    def scan(self) -> list[os.DirEntry[str]]:
        """The directory's entries (unsorted). Their `path` is not to be trusted: join `name` to `path` instead."""
        source: int | str = self._fd if self._fd is not None else self.path
        with os.scandir(source) as it:
            return list(it)

    def allows(self, name: str) -> bool:
        """Whether tools may read the entry `name`, which is not a symbolic link."""
        child = self._child(name)
        if self._fd is None:
            return self._caps.is_readable(child)
        blocked = self._blocked
        if blocked is None:
            # The directory itself is readable, so no protected path holds it: an entry is refused only when it is a
            # protected path itself. Those directly in this directory are found once, by their last name.
            flavor = current_flavor()
            here = path_key(self.path, flavor)
            depth = len(here)
            found: set[str] = set()
            for protected in self._caps.protected_paths:
                key = path_key(os.fspath(protected), flavor)
                if len(key) == depth + 1 and key[:depth] == here:
                    found.add(key[-1])
            blocked = self._blocked = frozenset(found)
        return not blocked or component_key(name) not in blocked

    def lstat(self, name: str) -> os.stat_result:
        """The entry's own status (a link is not followed)."""
        if self._fd is None:
            return os.lstat(self._child(name))
        self._child(name)
        return os.stat(name, dir_fd=self._fd, follow_symlinks=False)

    def open_file(self, name: str) -> IO[bytes]:
        """Open the regular file `name` for reading. The caller closes it.

        Raises:
            CapabilityDeniedError: the entry is protected, or is now a symbolic link.
            OSError: it is not a regular file, or cannot be opened.
        """
        child = self._child(name)
        if self._fd is None:
            return self._caps.open_read(child)
        return _regular_file(self._open_entry(name, child, _O_NONBLOCK), child)

    def open_directory(self, name: str) -> DirectoryHandle:
        """Open the subdirectory `name` the same way. The caller closes it.

        Raises:
            CapabilityDeniedError: the entry is protected, or is now a symbolic link.
            NotADirectoryError: it is not a directory.
        """
        child = self._child(name)
        if self._fd is None:
            return self._caps.open_directory(child)
        return DirectoryHandle(self._caps, child, self._open_entry(name, child, _O_DIRECTORY))

    def _open_entry(self, name: str, child: str, flags: int) -> int:
        """Open the entry `name` relative to the open directory, read-only with `flags`, never through a link."""
        assert self._fd is not None
        if not self.allows(name):
            raise _deny(f"Path {child!r} is inside the runtime's protected state.", child, "protected-state")
        try:
            return os.open(name, os.O_RDONLY | flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=self._fd)
        except OSError as exc:
            # A link fails as "too many levels"; with O_DIRECTORY some systems say "not a directory" instead, so
            # that answer is told apart from a plain file.
            if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and self._is_link(name)):
                raise _swapped(child) from None
            raise

    def _is_link(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(self.lstat(name).st_mode)
        except OSError:
            return False


def _regular_file(fd: int, path: str) -> IO[bytes]:
    """A file object for `fd`, opened non-blocking, when it is a regular file (blocking again); else it is closed and
    `IsADirectoryError` or `OSError` raised."""
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "Not a regular file", path)
        _clear_nonblock(fd)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _swapped(text: str) -> CapabilityDeniedError:
    return _deny(
        f"Path {text!r} changed between the check and the open (a swapped link); nothing was read or written.",
        text,
        "swapped",
    )


def _clear_nonblock(fd: int) -> None:
    if sys.platform != "win32" and _O_NONBLOCK:
        os.set_blocking(fd, True)


def _env_key(name: str) -> str:
    return name.upper() if os.name == "nt" else name


def _join_words(words: Iterable[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)


def _roots(paths: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    cwd = os.getcwd()
    out: list[Path] = []
    for p in paths:
        text = os.fspath(p)
        if not isinstance(text, str) or not text:
            raise ValueError(f"a root must be a non-empty path, not {p!r}")
        if os.name == "nt":
            for prefix in ("\\\\?\\UNC\\", "\\\\?\\"):
                if text.startswith(prefix):
                    text = ("\\\\" if prefix.endswith("UNC\\") else "") + text[len(prefix) :]
        try:
            real = resolve_real(text, cwd)
        except SymlinkLoopError as exc:
            raise ValueError(f"root {text!r} holds a symbolic link loop") from exc
        out.append(Path(real))
    return _unique(tuple(out))


def _state_dirs(roots: Iterable[Path]) -> tuple[Path, ...]:
    """`.onellm` under each root, and its real path too when it is a link to somewhere else."""
    out: list[Path] = []
    for root in roots:
        state = root / STATE_DIR_NAME
        out.append(state)
        try:
            real = Path(resolve_real(state, os.fspath(root)))
        except SymlinkLoopError:
            continue
        if real != state:
            out.append(real)
    return _unique(tuple(out))


def _intersect_roots(a: Sequence[Path], b: Sequence[Path]) -> tuple[Path, ...]:
    flavor = current_flavor()
    out: list[Path] = []
    for ra in a:
        for rb in b:
            if is_within(os.fspath(ra), os.fspath(rb), flavor):
                out.append(ra)
            elif is_within(os.fspath(rb), os.fspath(ra), flavor):
                out.append(rb)
    return _unique(tuple(out))


def _str_list(value: object, path: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadDefinitionError("expected a list of strings", path=path)
    return list(value)


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise BadDefinitionError("expected true or false", path=path)
    return value
