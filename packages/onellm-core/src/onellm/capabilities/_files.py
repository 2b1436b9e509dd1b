"""The file grant: read roots, write roots and the write protections, and every check a path goes through.

A path is turned into its real path (`_paths.resolve_real`) and then checked: under a root (read roots, or write roots
for a write), outside the runtime's protected state, and for a write, clear of repository control paths, git
directories and, while git can run, git's role files. The checks never touch a file's content; opening files through
the double check is `_file_io`'s job. See `docs/capabilities.md` for the rules in prose.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from onellm.capabilities._paths import (
    CONTROL_NAMES,
    GIT_DIR_MARKERS,
    GIT_ROLE_DIRS,
    GIT_ROLE_FILES,
    STATE_DIR_NAME,
    SymlinkLoopError,
    UnresolvablePathError,
    current_flavor,
    foreign_drive_problem,
    is_within,
    length_problem,
    loose_key,
    loosely_within,
    name_key,
    resolve_real,
    short_alias_problem,
    split_components,
    windows_form_problem,
)
from onellm.capabilities._refusal import denial, shown
from onellm.errors import BadDefinitionError, CapabilityDeniedError

__all__ = ["FileGrant"]


def _deny(message: str, target: object, rule: str) -> CapabilityDeniedError:
    return denial(message, target=str(target), rule=rule)


# Every refusal names the path as it was given, and nothing else of the host: not the real path it leads to (a link's
# target may lie outside the roots), not the roots, not the protected directories. The model reads these messages.


def _unique(items: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True, slots=True)
class FileGrant:
    """Which directories the file tools may read and write, and what they may not touch even there."""

    read_roots: tuple[Path, ...] = ()
    """Directories tools may read below (real paths). Write roots are readable too."""
    write_roots: tuple[Path, ...] = ()
    """Directories tools may write below (real paths)."""
    protected_paths: tuple[Path, ...] = ()
    """Neither readable nor writable by the file tools: the runtime's state (`.onellm` under every root, stores, sinks)."""
    git_ceiling: bool = False
    """The git role rule is armed: git configuration, pointer and hook files are refused to writers."""
    repo_control_writes: bool = False
    """The host lifted the repository-control and git rules."""

    # ------------------------------------------------------------------------------------------------ constructors

    @classmethod
    def files(cls, roots: Iterable[str | os.PathLike[str]]) -> FileGrant:
        """Read and write below each root; `.onellm` there is protected."""
        real = roots_of(roots)
        return cls(read_roots=real, write_roots=real, protected_paths=_state_dirs(real))

    @classmethod
    def read_only(cls, roots: Iterable[str | os.PathLike[str]]) -> FileGrant:
        """Read below each root; `.onellm` there is protected too."""
        real = roots_of(roots)
        return cls(read_roots=real, protected_paths=_state_dirs(real))

    # -------------------------------------------------------------------------------------------------- the policy

    @property
    def has_read(self) -> bool:
        return bool(self.read_roots or self.write_roots)

    @property
    def has_write(self) -> bool:
        return bool(self.write_roots)

    @property
    def readable_roots(self) -> tuple[Path, ...]:
        """Read roots and write roots, each once."""
        return _unique(self.read_roots + self.write_roots)

    def union(self, other: FileGrant) -> FileGrant:
        """Either side's roots; the protections of both; the repository rules lifted when either side lifted them."""
        return FileGrant(
            read_roots=_unique(self.read_roots + other.read_roots),
            write_roots=_unique(self.write_roots + other.write_roots),
            protected_paths=_unique(self.protected_paths + other.protected_paths),
            git_ceiling=self.git_ceiling or other.git_ceiling,
            repo_control_writes=self.repo_control_writes or other.repo_control_writes,
        )

    def intersect(self, other: FileGrant) -> FileGrant:
        """Roots intersected by containment; the protections of both; the rules lifted only when both lifted them."""
        return FileGrant(
            read_roots=_intersect_roots(self.readable_roots, other.readable_roots),
            write_roots=_intersect_roots(self.write_roots, other.write_roots),
            protected_paths=_unique(self.protected_paths + other.protected_paths),
            git_ceiling=self.git_ceiling or other.git_ceiling,
            repo_control_writes=self.repo_control_writes and other.repo_control_writes,
        )

    def with_protected_paths(self, paths: Iterable[str | os.PathLike[str]]) -> FileGrant:
        return replace(self, protected_paths=_unique(self.protected_paths + roots_of(paths)))

    # -------------------------------------------------------------------------------------------------- the checks

    def resolve(self, path: str | os.PathLike[str], base: str) -> str:
        """The real path of `path` (relative to `base`), after the checks of its written form.

        Raises:
            CapabilityDeniedError: a NUL character, an empty path, a symlink loop, or on Windows a refused form.
        """
        text = os.fspath(path)
        if not isinstance(text, str):
            raise TypeError("paths must be text, not bytes")
        if "\x00" in text:
            raise _deny(f"Path {shown(text)!r} contains a NUL character.", text, "bad-path")
        if text == "":
            raise _deny("An empty path names nothing.", text, "bad-path")
        if os.name == "nt":
            problem = windows_form_problem(text)
            if problem is not None:
                raise _deny(f"Path {text!r} is refused: {problem}.", text, "windows-form")
            foreign = foreign_drive_problem(text, base, [os.fspath(r) for r in self.readable_roots])
            if foreign is not None:
                raise _deny(f"Path {text!r} is {foreign}.", text, "outside-roots")
        try:
            resolved = resolve_real(text, base)
        except SymlinkLoopError:
            raise _deny(f"Path {shown(text)!r} holds a symbolic link loop.", text, "symlink-loop") from None
        except UnresolvablePathError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise _deny(f"Path {shown(text)!r} is longer than the file system allows.", text, "bad-path") from None
            reason = (exc.strerror or "the system refused to look it up").lower()
            raise _deny(f"Path {shown(text)!r} cannot be resolved: {reason}.", text, "bad-path") from None
        too_long = length_problem(resolved)
        if too_long is not None:
            raise _deny(f"Path {shown(text)!r} is longer than the file system allows ({too_long}).", text, "bad-path")
        return resolved

    def check(self, text: str, resolved: str, *, write: bool, base: str) -> None:
        """Refuse a resolved path the grant does not allow (`text` is the path as given, for the message).

        Raises:
            CapabilityDeniedError: outside the roots, read-only, protected state, or for a write a repository control
                path, a git directory or a git role file.
        """
        flavor = current_flavor()
        roots = self.write_roots if write else self.readable_roots
        if not roots:
            kind = "write" if write else "read"
            raise _deny(f"Path {shown(text)!r} is refused: no file {kind} grant.", text, f"no-file-{kind}")
        root = next((r for r in roots if is_within(resolved, os.fspath(r), flavor)), None)
        if root is None:
            if write and any(is_within(resolved, os.fspath(r), flavor) for r in self.readable_roots):
                raise _deny(f"Path {shown(text)!r} is under a read-only root.", text, "read-only")
            kind = "write" if write else "read"
            raise _deny(f"Path {shown(text)!r} is outside the {kind} roots.", text, "outside-roots")
        alias = short_alias_problem(resolved, os.fspath(root))
        if alias is not None:
            raise _deny(f"Path {shown(text)!r} is refused: {alias}.", text, "short-name")
        # The path as written counts too, so a state directory replaced by a link stays out of reach by its name. The
        # comparison ignores case and the code points HFS+ ignores on every platform: a case-folding file system on
        # Linux would otherwise open `.ONELLM` as `.onellm`.
        written = os.path.normpath(os.path.join(base, text))
        for protected in self.protected_paths:
            key = os.fspath(protected)
            if loosely_within(resolved, key, flavor) or loosely_within(written, key, flavor):
                raise _deny(f"Path {shown(text)!r} is inside the runtime's protected state.", text, "protected-state")
        if write and not self.repo_control_writes:
            self._check_repository_rules(text, resolved, base, root)

    def _check_repository_rules(self, text: str, resolved: str, base: str, root: Path) -> None:
        _, names = split_components(resolved, current_flavor())
        # The names as written count too: a control name that a link or `..` would hide is still refused.
        _, written = split_components(os.path.join(base, text), current_flavor())
        for name in (*names, *written):
            if name_key(name) in CONTROL_NAMES:
                raise _deny(
                    f"Path {shown(text)!r} is a repository control path ({name!r}); tools may not write there.",
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
                        f"Path {shown(text)!r}: a file named {final!r} is refused while git can run "
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
                        f"Path {shown(text)!r} is under a directory named {name!r}, refused while git can run "
                        "(git is on the shell allow-list, or the grants carry the git ceiling).",
                        text,
                        "git-role",
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
                        f"Path {shown(text)!r} is in a git directory (one holding HEAD, objects and refs), or would "
                        "complete one; tools may not write there.",
                        text,
                        "git-directory",
                    )
            parent, name = os.path.split(current)
            if not name or parent == current:
                break
            child = name
            current = parent

    def check_planned_writes(
        self,
        targets: Iterable[str | os.PathLike[str]],
        written: Iterable[str | os.PathLike[str]],
        labels: Mapping[Any, str] | None = None,
    ) -> None:
        """Refuse a set of writes that, taken together, would make a directory look like a git directory (see
        `Capabilities.check_planned_writes`).

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
                    label = _label(labels, item, target)
                    raise _deny(
                        f"Path {shown(label)!r} would be in a git directory: together with the other files of this "
                        "set its directory holds HEAD, objects and refs; tools may not write there. Nothing was "
                        "written.",
                        label,
                        "git-directory",
                    )

    def resolve_read(self, path: str | os.PathLike[str], base: str) -> Path:
        """The real path of `path` if tools may read it (see `Capabilities.resolve_read`)."""
        resolved = self.resolve(path, base)
        self.check(os.fspath(path), resolved, write=False, base=base)
        return Path(resolved)

    def resolve_write(self, path: str | os.PathLike[str], base: str) -> Path:
        """The real path of `path` if tools may write it (see `Capabilities.resolve_write`)."""
        resolved = self.resolve(path, base)
        self.check(os.fspath(path), resolved, write=True, base=base)
        return Path(resolved)

    def is_readable(self, path: str | os.PathLike[str], base: str) -> bool:
        try:
            self.resolve_read(path, base)
        except CapabilityDeniedError:
            return False
        return True

    def is_writable(self, path: str | os.PathLike[str], base: str) -> bool:
        try:
            self.resolve_write(path, base)
        except CapabilityDeniedError:
            return False
        return True

    def may_write_below(self, path: str) -> bool:
        """Whether the file tools could write at or below `path` (an absolute path): it resolves under a write root and
        outside the protected state. The repository rules are left out, so this says yes a little more often than
        `is_writable`, which is the safe side for a question asked to decide what to distrust."""
        try:
            real = resolve_real(path, os.sep)
        except OSError:
            return True  # cannot tell: distrust it
        flavor = current_flavor()
        if not any(is_within(real, os.fspath(r), flavor) for r in self.write_roots):
            return False
        return not any(loosely_within(real, os.fspath(p), flavor) for p in self.protected_paths)

    def protected_names_in(self, directory: str) -> frozenset[str]:
        """The comparison keys of the protected paths that sit directly in `directory` (a readable real path).

        A directory the grant lets tools read is inside no protected path, so an entry in it that is not a link is
        refused only when it is a protected path itself: one of these names.
        """
        flavor = current_flavor()
        here = loose_key(directory, flavor)
        depth = len(here)
        found: set[str] = set()
        for protected in self.protected_paths:
            key = loose_key(os.fspath(protected), flavor)
            if len(key) == depth + 1 and key[:depth] == here:
                found.add(key[-1])
        return frozenset(found)

    @staticmethod
    def entry_key(name: str) -> str:
        """The comparison key of one directory entry's name, as `protected_names_in` gives them."""
        return name_key(name)

    # ------------------------------------------------------------------------------------------------ persistence

    def to_data(self) -> dict[str, Any]:
        """The roots part of the saved summary: `readRoots` (write roots included) and `writeRoots`."""
        return {
            "readRoots": [os.fspath(r) for r in self.readable_roots],
            "writeRoots": [os.fspath(r) for r in self.write_roots],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str) -> FileGrant:
        """Rebuild the roots from the saved summary; `.onellm` under each is protected again.

        Raises:
            BadDefinitionError: `readRoots` or `writeRoots` is not a list of strings.
        """
        read = _str_list(data.get("readRoots", []), f"{path}.readRoots")
        write = _str_list(data.get("writeRoots", []), f"{path}.writeRoots")
        write_real = roots_of(write)
        read_real = _unique(roots_of(read) + write_real)
        return cls(read_roots=read_real, write_roots=write_real, protected_paths=_state_dirs(read_real))


def _label(labels: Mapping[Any, str] | None, item: object, target: Path) -> str:
    """How a planned write is named in a refusal: its label (the path as the caller wrote it), else its file name."""
    if labels:
        for key in (item, target, os.fspath(target)):
            try:
                found = labels.get(key)
            except TypeError:
                continue
            if found is not None:
                return found
    return target.name


def roots_of(paths: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """Each path as the real path of a root (relative ones start at the process's working directory), each once.

    Raises:
        ValueError: an empty path, or one holding a symbolic link loop.
    """
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
        except UnresolvablePathError as exc:
            raise ValueError(f"root {text!r} cannot be resolved: {exc.strerror}") from exc
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
        except (SymlinkLoopError, UnresolvablePathError):
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
