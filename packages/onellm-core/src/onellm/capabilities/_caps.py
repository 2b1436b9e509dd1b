"""`Capabilities`: what the host lets tools touch, as three peer grants composed into one value.

- the file grant (`FileGrant`, `_files`): read and write roots and the write protections, with the path checks; the
  double-checked opens beside it (`_file_io`);
- the shell grant (`ShellGrant`, `_shell`): open, allow-list or approval, with the command checks; line reading
  (`_command_line`) and the process runner (`_process`) beside it;
- the network grant (`NetworkGrant`, `_network`): host and address entries, with the host and connection checks;
  `EgressClient` (`_egress`) beside it.

`Capabilities` adds only what concerns them together: the working directory relative paths and commands start from,
union (`+`) and `intersect` grant by grant, the git mark a shell grant sets on the file grant, the summary written to
the instance file, and the public methods, each handed to the grant it belongs to. See `docs/capabilities.md`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from onellm.capabilities import _file_io
from onellm.capabilities._file_io import DirectoryHandle
from onellm.capabilities._files import FileGrant, roots_of
from onellm.capabilities._network import NetworkGrant
from onellm.capabilities._refusal import denial
from onellm.capabilities._shell import (
    CommandDecision,
    CommandRequest,
    CommandResult,
    PreparedCommand,
    ShellApprover,
    ShellGrant,
    ShellMode,
    ShellOptions,
)
from onellm.errors import BadDefinitionError

__all__ = ["Capabilities"]


# No slots: with slots, Python 3.11's frozen dataclass fails with TypeError (not AttributeError) when a read-only
# property such as `read_roots` is assigned.
@dataclass(frozen=True)
class Capabilities:
    """An immutable set of grants: files, shell and network, and the working directory they start from.

    Build it with the class methods and combine with `+` (union) and `intersect` (what a sub-agent gets). A value
    made with the plain constructor grants nothing.
    """

    file_grant: FileGrant = field(default_factory=FileGrant)
    """Read and write roots and the write protections."""
    shell_grant: ShellGrant = field(default_factory=ShellGrant)
    """How `execute_terminal_command` may run a line."""
    network_grant: NetworkGrant = field(default_factory=NetworkGrant)
    """Which hosts and addresses tools may connect to."""
    working_directory: Path | None = None
    """Where relative paths and commands start; the process's working directory when None."""

    # ------------------------------------------------------------------------------------------------ constructors

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
        return cls(file_grant=FileGrant.files(roots or (os.getcwd(),)))

    @classmethod
    def read_only_files(cls, *roots: str | os.PathLike[str]) -> Capabilities:
        """Read below each root. `.onellm` there is protected too."""
        return cls(file_grant=FileGrant.read_only(roots or (os.getcwd(),)))

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
        return cls._with_shell(ShellGrant.allow_list(*entries))

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
        return cls(network_grant=NetworkGrant.of(*entries))

    @classmethod
    def any_public_hosts(cls) -> Capabilities:
        """Connections to every public host; loopback, private and link-local addresses stay refused."""
        return cls(network_grant=NetworkGrant(True))

    @classmethod
    def _with_shell(cls, shell: ShellGrant) -> Capabilities:
        # A shell grant that can run git marks the file grant: the mark is a write protection, so it lives there and
        # survives `+` and `intersect` even when the shell part is narrowed away.
        if not shell.enabled:
            return cls()
        return cls(file_grant=FileGrant(git_ceiling=shell.lists_git), shell_grant=shell)

    # ------------------------------------------------------------------------------------------------- the parts

    @property
    def read_roots(self) -> tuple[Path, ...]:
        """Directories tools may read below (real paths). Write roots are readable too."""
        return self.file_grant.read_roots

    @property
    def write_roots(self) -> tuple[Path, ...]:
        """Directories tools may write below (real paths)."""
        return self.file_grant.write_roots

    @property
    def protected_paths(self) -> tuple[Path, ...]:
        """Neither readable nor writable by the file tools: `.onellm` under every root, stores, sinks."""
        return self.file_grant.protected_paths

    @property
    def git_ceiling(self) -> bool:
        """The git role rule is armed: git configuration, pointer and hook files are refused to writers."""
        return self.file_grant.git_ceiling

    @property
    def repo_control_writes(self) -> bool:
        """The host lifted the repository-control and git rules."""
        return self.file_grant.repo_control_writes

    # -------------------------------------------------------------------------------------------------- combining

    def __add__(self, other: Capabilities) -> Capabilities:
        if not isinstance(other, Capabilities):
            return NotImplemented
        return Capabilities(
            file_grant=self.file_grant.union(other.file_grant),
            shell_grant=self.shell_grant.union(other.shell_grant),
            network_grant=self.network_grant.union(other.network_grant),
            working_directory=self.working_directory or other.working_directory,
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
            file_grant=self.file_grant.intersect(other.file_grant),
            shell_grant=self.shell_grant.intersect(other.shell_grant),
            network_grant=self.network_grant.intersect(other.network_grant),
            working_directory=self.working_directory or other.working_directory,
        )

    def with_git_ceiling(self) -> Capabilities:
        """Arm the git role rule although no listed program is known to run git."""
        return replace(self, file_grant=replace(self.file_grant, git_ceiling=True))

    def with_repo_control_writes(self) -> Capabilities:
        """Allow writes to repository control paths, git directories and git role files (trusting the model)."""
        return replace(self, file_grant=replace(self.file_grant, repo_control_writes=True))

    def with_protected_paths(self, *paths: str | os.PathLike[str]) -> Capabilities:
        """Add paths the file tools can neither read nor write (store and sink directories, for example)."""
        return replace(self, file_grant=self.file_grant.with_protected_paths(paths))

    def with_working_directory(self, path: str | os.PathLike[str]) -> Capabilities:
        """Where relative paths and commands start (taken as its real path).

        Raises:
            ValueError: the path holds a symbolic link loop, or cannot be resolved.
        """
        (real,) = roots_of((path,))
        return replace(self, working_directory=real)

    def _base(self, base: str | os.PathLike[str] | None) -> str:
        if base is not None:
            return os.fspath(base)
        return os.fspath(self.working_directory) if self.working_directory is not None else os.getcwd()

    # ------------------------------------------------------------------------------------------------------ files

    @property
    def has_file_read(self) -> bool:
        return self.file_grant.has_read

    @property
    def has_file_write(self) -> bool:
        return self.file_grant.has_write

    def resolve_read(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """The real path of `path` if tools may read it.

        Raises:
            CapabilityDeniedError: outside the read roots, inside protected state, a symlink loop, or a refused form.
        """
        return self.file_grant.resolve_read(path, self._base(base))

    def resolve_write(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """The real path of `path` (resolved through its deepest existing ancestor) if tools may write it.

        Raises:
            CapabilityDeniedError: outside the write roots, inside protected state, a repository control path, a git
                directory, a git role file while git can run, a symlink loop, or a refused form.
        """
        return self.file_grant.resolve_write(path, self._base(base))

    def is_readable(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> bool:
        """`resolve_read` as a yes/no answer (listings use it to leave protected entries out)."""
        return self.file_grant.is_readable(path, self._base(base))

    def is_writable(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> bool:
        """`resolve_write` as a yes/no answer."""
        return self.file_grant.is_writable(path, self._base(base))

    def check_planned_writes(
        self,
        targets: Iterable[str | os.PathLike[str]],
        written: Iterable[str | os.PathLike[str]],
        *,
        labels: Mapping[Any, str] | None = None,
    ) -> None:
        """Refuse a set of writes that, taken together, would make a directory look like a git directory.

        Each write is checked on its own against the disk (`resolve_write`), where the others of the set are not yet:
        a patch that adds `HEAD`, `objects/` and `refs/` at once would pass those checks one by one, and plant a
        repository (with a `config` or a hook for git to run) in one step. Here the files in `written` count as
        present; `targets` (the resolved paths the set touches, `written` among them) are refused when one of their
        directories would then hold all three. Nothing is refused when the grant allows repository-control writes.
        `labels` maps a target to the name the refusal gives it (the path as the caller wrote it); without one, a
        target is named by its file name, so no host path is shown.

        Raises:
            CapabilityDeniedError: rule `git-directory`.
        """
        self.file_grant.check_planned_writes(targets, written, labels)

    def open_directory(
        self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None
    ) -> DirectoryHandle:
        """Open a directory tools may read, to walk what it holds by name (`DirectoryHandle`). The caller closes it
        (or uses it as a context manager).

        Raises:
            CapabilityDeniedError: as `resolve_read`, or when the directory changed between the check and the open.
            NotADirectoryError: the path is not a directory.
        """
        return _file_io.open_directory(self.file_grant, path, self._base(base))

    def open_read(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> IO[bytes]:
        """Open a regular file for reading through the double check. The caller closes it.

        Raises:
            CapabilityDeniedError: as `resolve_read`, or when the path changed between the check and the open.
            IsADirectoryError: the path is a directory. OSError: for anything else that is not a regular file.
        """
        return _file_io.open_read(self.file_grant, path, self._base(base))

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
        return _file_io.open_write(
            self.file_grant, path, self._base(base), append=append, exclusive=exclusive, make_parents=make_parents
        )

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
        return _file_io.make_directories(self.file_grant, path, self._base(base))

    def remove_file(self, path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> Path:
        """Delete one directory entry: a link itself, never its target. The entry's directory is resolved and checked
        as a write, and the entry is removed relative to a verified handle on that directory."""
        return _file_io.remove_file(self.file_grant, path, self._base(base))

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
                program is not on PATH (outside the directories the file tools can write), or an argument would be
                re-read as a command.
        """
        return self.shell_grant.parse(line, trusted=self._program_trusted())

    def prepare_command(
        self,
        line: str,
        *,
        working_directory: str | os.PathLike[str] | None = None,
        environment: Mapping[str, str] | None = None,
        options: ShellOptions | None = None,
        host_environment: Mapping[str, str] | None = None,
        base: str | os.PathLike[str] | None = None,
    ) -> PreparedCommand:
        """Every check for one command: the line, the working directory (read access), the model's variables.

        A relative `working_directory` starts at `base` (the grants' working directory when None); a refusal names it
        as given.

        Raises:
            CapabilityDeniedError: any check failed; nothing has run.
        """
        trusted = self._program_trusted()
        program, args = self.shell_grant.parse(line, trusted=trusted)
        cwd_text = os.fspath(working_directory) if working_directory is not None else os.curdir
        cwd = self.resolve_read(cwd_text, base=base)
        if not cwd.is_dir():
            raise denial(
                f"Working directory {cwd_text!r} is not a directory.", target=cwd_text, rule="working-directory"
            )
        return self.shell_grant.prepare(
            line,
            program,
            args,
            working_directory=os.fspath(cwd),
            environment=environment,
            options=options or ShellOptions(),
            host_environment=host_environment,
            trusted=trusted,
        )

    def _program_trusted(self) -> Callable[[str], bool] | None:
        """Whether a program may be run from a path: not where the file tools can write (None: they write nowhere).

        One answer per path for the whole check: the line's program, the argv and the child's PATH ask about the same
        directories.
        """
        grant = self.file_grant
        if not grant.write_roots:
            return None
        answers: dict[str, bool] = {}

        def trusted(path: str) -> bool:
            answer = answers.get(path)
            if answer is None:
                answer = answers[path] = not grant.may_write_below(path)
            return answer

        return trusted

    async def approve(self, request: CommandRequest) -> bool:
        """Ask every approver of the grant (in order); True only when all approve. True when there are none.

        A plain (non-async) approver runs in a worker thread, so one that prompts at a terminal does not stall the
        event loop.
        """
        return await self.shell_grant.approve(request)

    def decide_command(
        self,
        line: str,
        *,
        working_directory: str | os.PathLike[str] | None = None,
        environment: Mapping[str, str] | None = None,
        options: ShellOptions | None = None,
        base: str | os.PathLike[str] | None = None,
    ) -> CommandDecision:
        """Every check for one command, and what happens next: `hold` when the grant holds it for a person.

        The agent loop calls this for each `execute_terminal_command` call before running it (with the call's
        `command`, `working_dir` and `environment`, and the call's working directory as `base`). A refused command
        raises here, as the tool would; a held one (`decision.hold`, under `shell_with_loop_approval()`) is saved
        with a pending approval showing `decision.request`, and run once a person approved it.

        Raises:
            CapabilityDeniedError: any check failed; nothing has run.
        """
        prepared = self.prepare_command(
            line, working_directory=working_directory, environment=environment, options=options, base=base
        )
        return self.shell_grant.decide(prepared)

    async def run_command(
        self,
        line: str,
        *,
        working_directory: str | os.PathLike[str] | None = None,
        environment: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
        options: ShellOptions | None = None,
        approved: bool = False,
        base: str | os.PathLike[str] | None = None,
    ) -> CommandResult:
        """Check, approve and run one command; the process runner behind `execute_terminal_command`.

        `approved=True` says the agent loop's approval gate already approved this call (loop approval); host
        approvers are asked here either way.

        Raises:
            CapabilityDeniedError: a check failed, or an approver said no.
            CapabilityMissingError: the grant holds every command for the agent loop's approval gate
                (`shell_with_loop_approval()`) and the call was not approved there: such a grant needs the agent
                loop, which holds the call for approval (`decide_command`).
        """
        options = options or ShellOptions()
        prepared = self.prepare_command(
            line, working_directory=working_directory, environment=environment, options=options, base=base
        )
        return await self.shell_grant.run(prepared, approved=approved, timeout_seconds=timeout_seconds, options=options)

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
        return {
            **self.file_grant.to_data(),
            "workingDirectory": os.fspath(self.working_directory) if self.working_directory else None,
            "shell": self.shell_grant.to_data(),
            "network": self.network_grant.to_data(),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, path: str = "capabilities") -> Capabilities:
        """Rebuild grants from a saved summary. Approval without an approver becomes the loop gate.

        Raises:
            BadDefinitionError: the summary is not well formed (the path names the key).
        """
        if not isinstance(data, Mapping):
            raise BadDefinitionError("capabilities must be a mapping", path=path)
        files = FileGrant.from_data(data, path)
        wd = data.get("workingDirectory")
        if wd is not None and not isinstance(wd, str):
            raise BadDefinitionError("workingDirectory must be a string", path=f"{path}.workingDirectory")
        shell = data.get("shell", {}) or {}
        if not isinstance(shell, Mapping):
            raise BadDefinitionError("shell must be a mapping", path=f"{path}.shell")
        network = data.get("network", {}) or {}
        if not isinstance(network, Mapping):
            raise BadDefinitionError("network must be a mapping", path=f"{path}.network")
        shell_grant = ShellGrant.from_data(shell, f"{path}.shell")
        return cls(
            file_grant=replace(files, git_ceiling=shell_grant.lists_git),
            shell_grant=shell_grant,
            network_grant=NetworkGrant.from_data(network, f"{path}.network"),
            working_directory=Path(wd) if wd else None,
        )
