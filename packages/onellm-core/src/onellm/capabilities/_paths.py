"""Path resolution and the name rules behind the file grants.

Two layers live here:

* pure string functions (`name_key`, `path_key`, `is_within`, `windows_form_problem`) that compare and classify paths
  for a given platform flavour, so the Windows and macOS rules can be tested on any machine;
* `resolve_real`, which turns a path into its real path on this machine: relative paths start at a base directory,
  `..` applies to the real directory reached so far (so `link/..` is the link target's parent), symlinks (and, on
  Windows, junctions) are followed, a loop is refused, and a tail that does not exist yet is appended as written.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import stat
import sys
import unicodedata
from collections import deque
from collections.abc import Callable
from typing import Literal

Flavor = Literal["posix", "darwin", "windows"]

#: Repository control names: a component with one of these names may not be written (any case, trailing dots and
#: spaces ignored).
CONTROL_NAMES = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", "_darcs", ".fslckout", ".sl", "cvs", ".gitmodules"})
#: File names git reads as configuration or pointers, refused to writers when git is on the shell allow-list.
GIT_ROLE_FILES = frozenset({"config", "config.worktree", "commondir", "gitdir", ".gitconfig"})
#: Directory names whose content git runs or reads, refused to writers when git is on the shell allow-list.
GIT_ROLE_DIRS = frozenset({"hooks", "info"})
#: The three entries that make a directory a git directory, whatever it is called.
GIT_DIR_MARKERS = ("HEAD", "objects", "refs")
#: The runtime's state directory under every file root.
STATE_DIR_NAME = ".onellm"

_MAX_LINKS = 40

# Letters some file systems treat as ASCII letters: dotless i, long s, Kelvin sign. `str.casefold` already maps the
# long s and the Kelvin sign; the dotless i needs its own entry.
_EXTRA_FOLDS = str.maketrans({"\u0131": "i", "\u017f": "s", "\u212a": "k"})

_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{c}" for c in "0123456789\u00b9\u00b2\u00b3"}
    | {f"lpt{c}" for c in "0123456789\u00b9\u00b2\u00b3"}
)


def current_flavor() -> Flavor:
    """The comparison flavour of the machine this runs on."""
    if os.name == "nt":
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "posix"


def fold(text: str) -> str:
    """Case-insensitive comparison key: Unicode case folding plus the dotless i, long s and Kelvin sign."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", text).casefold().translate(_EXTRA_FOLDS)


# Code points HFS+ leaves out when it compares names (the zero-width joiners and marks, the bidirectional embeddings,
# the deprecated format controls, the byte-order mark): `.g\u200cit` is `.git` there. Git refuses them in `.git` for
# the same reason.
_HFS_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF], None
)


def name_key(name: str) -> str:
    """Comparison key of one file name for the rules that only refuse (control names, git roles, protected state), on
    every platform.

    Trailing dots and spaces are dropped (Windows ignores them), code points HFS+ ignores are removed, and the name is
    folded, so `.GIT.`, `.Git `, `.g\u200cit` and `.git` are the same name. A false match only refuses more.
    """
    if not name.isascii():
        name = name.translate(_HFS_IGNORED)
    stripped = name.rstrip(". ")
    return fold(stripped if stripped else name)


def loose_key(path: str, flavor: Flavor | None = None) -> tuple[str, ...]:
    """The key of a path for rules that only refuse: the anchor, then `name_key` of each name, on every platform.

    A file system that ignores case (Windows, macOS, a case-folding ext4 directory, a FAT or SMB mount on Linux), or
    the code points HFS+ ignores, would otherwise let `.ONELLM` reach the protected `.onellm`.
    """
    anchor, names = split_components(path, flavor or current_flavor())
    return (fold(anchor), *(name_key(n) for n in names))


def loosely_within(candidate: str, root: str, flavor: Flavor | None = None) -> bool:
    """`is_within`, comparing by `loose_key`: true for more pairs than any file system would treat as the same."""
    ck = loose_key(candidate, flavor)
    rk = loose_key(root, flavor)
    return len(ck) >= len(rk) and ck[: len(rk)] == rk


def split_components(path: str, flavor: Flavor) -> tuple[str, list[str]]:
    """Split an absolute path into its anchor (`/`, `c:`, `//server/share`) and its names."""
    if flavor == "windows":
        text = path.replace("/", "\\")
        for prefix in ("\\\\?\\UNC\\", "\\\\.\\UNC\\"):
            if text[: len(prefix)].upper() == prefix:
                text = "\\\\" + text[len(prefix) :]
        for prefix in ("\\\\?\\", "\\\\.\\", "\\??\\"):
            if text.startswith(prefix):
                text = text[len(prefix) :]
        drive, rest = ntpath.splitdrive(text)
        names = [n for n in rest.split("\\") if n not in ("", ".")]
        return drive.lower(), names
    names = [n for n in path.split("/") if n not in ("", ".")]
    return "/", names


def path_key(path: str, flavor: Flavor | None = None) -> tuple[str, ...]:
    """The key two real paths are compared by: the anchor, then one key per name.

    On posix systems names compare exactly. On macOS and Windows they are folded; on Windows trailing dots and spaces
    are dropped from each name, both slashes separate names and the extended-length prefix `\\\\?\\` is ignored, so
    `\\\\?\\C:\\work` and `C:\\Work.` are the same directory.
    """
    flavor = flavor or current_flavor()
    anchor, names = split_components(path, flavor)
    if flavor == "posix":
        return (anchor, *names)
    if flavor == "darwin":
        return (anchor, *(fold(n) for n in names))
    return (fold(anchor), *(name_key(n) for n in names))


def component_key(name: str, flavor: Flavor | None = None) -> str:
    """The key of one name of a path, as `path_key` gives it."""
    flavor = flavor or current_flavor()
    if flavor == "posix":
        return name
    if flavor == "darwin":
        return fold(name)
    return name_key(name)


def is_within(candidate: str, root: str, flavor: Flavor | None = None) -> bool:
    """True when `candidate` is `root` or lies below it, compared name by name (so `/work2` is not under `/work`)."""
    flavor = flavor or current_flavor()
    ck = path_key(candidate, flavor)
    rk = path_key(root, flavor)
    return len(ck) >= len(rk) and ck[: len(rk)] == rk


def windows_form_problem(path: str) -> str | None:
    """Why a path given to a tool on Windows is refused before anything is probed, or None when its form is fine.

    Refused: drive-relative (`C:foo`), rooted without a drive (`\\foo`, `/foo`), extended, device and NT forms
    (`\\\\?\\`, `\\\\.\\`, `\\??\\`), network shares (`\\\\server\\share`), alternate data streams (`file:stream`), device
    names with or without an extension (`NUL`, `con.txt`, `COM1`, `LPT²`), and names of only dots and spaces.
    """
    text = path.replace("/", "\\")
    if text.startswith(("\\\\?\\", "\\\\.\\", "\\??\\")):
        return "extended or device path form"
    if text.startswith("\\\\"):
        return "network share path"
    drive, rest = ntpath.splitdrive(text)
    if drive and not rest.startswith("\\"):
        return "drive-relative path"
    if not drive and text.startswith("\\"):
        return "rooted path without a drive"
    for name in rest.split("\\"):
        if name in ("", ".", ".."):
            continue
        if ":" in name:
            return "alternate data stream"
        if name.strip(". ") == "":
            return "name of only dots and spaces"
        base = name.rstrip(". ").split(".", 1)[0].rstrip(" ")
        if fold(base) in _WINDOWS_DEVICES:
            return "device name"
    return None


class SymlinkLoopError(OSError):
    """A path holds a symlink loop, or more links than the system follows."""


class UnresolvablePathError(OSError):
    """The system refused to say what a name of the path is (a name too long, a directory that cannot be searched).

    Carries the system's `errno` and `strerror`, and no file name: the caller names the path as it was given.
    """


def _is_link(st: os.stat_result) -> bool:
    if stat.S_ISLNK(st.st_mode):
        return True
    # Junctions and other name-surrogate reparse points on Windows are followed like symlinks.
    tag = getattr(st, "st_reparse_tag", 0)
    return bool(tag) and bool(tag & 0x20000000)


def resolve_real(path: str | os.PathLike[str], base: str) -> str:
    """The real absolute path of `path`: links followed, `..` applied to the real directory, a missing tail kept.

    Raises `SymlinkLoopError` when more than 40 links are met (a loop), and `UnresolvablePathError` when the system
    refuses to look a name up (too long, or in a directory that cannot be searched).
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError("path contains a NUL character")
    mod = ntpath if os.name == "nt" else posixpath
    if not mod.isabs(text):
        text = mod.join(mod.abspath(base), text)
    if os.name == "nt":
        anchor, rest = ntpath.splitdrive(text)
        anchor = anchor + "\\"
        pending = deque(rest.replace("/", "\\").split("\\"))
    else:
        anchor = "/"
        pending = deque(text.split("/"))
    resolved = anchor
    links = 0
    # Names below the deepest existing directory, appended as written. A `..` first pops those; once it is back in
    # existing directories, resolution resumes, so `missing/../link` still follows `link`.
    missing = 0
    while pending:
        name = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            if missing:
                missing -= 1
            parent = mod.dirname(resolved)
            resolved = parent if parent else anchor
            continue
        candidate = mod.join(resolved, name)
        if missing:
            missing += 1
            resolved = candidate
            continue
        try:
            st = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            missing = 1
            resolved = candidate
            continue
        except OSError as exc:
            raise UnresolvablePathError(exc.errno, exc.strerror) from exc
        if _is_link(st):
            links += 1
            if links > _MAX_LINKS:
                raise SymlinkLoopError(f"too many levels of symbolic links in {os.fspath(path)!r}")
            try:
                target = os.readlink(candidate)
            except OSError as exc:
                raise UnresolvablePathError(exc.errno, exc.strerror) from exc
            if os.name == "nt":
                if target.startswith("\\\\?\\"):
                    target = target[4:]
                tdrive, trest = ntpath.splitdrive(target)
                if tdrive:
                    anchor = tdrive + "\\"
                    resolved = anchor
                    target = trest
                elif target.startswith(("\\", "/")):
                    resolved = anchor
                parts = target.replace("/", "\\").split("\\")
            else:
                if target.startswith("/"):
                    resolved = "/"
                parts = target.split("/")
            pending.extendleft(reversed(parts))
            continue
        resolved = candidate
    return resolved


#: The longest name the file systems onellm runs on accept: 255 bytes (posix) or 255 UTF-16 units (Windows).
NAME_MAX = 255


def _path_max() -> int:
    if os.name == "nt":
        return 32767
    try:
        return int(os.pathconf("/", "PC_PATH_MAX"))
    except (OSError, ValueError, AttributeError):
        return 4096


#: The longest whole path the system accepts.
PATH_MAX = _path_max()


def _units(name: str) -> int:
    if os.name == "nt":
        return len(name.encode("utf-16-le", "surrogatepass")) // 2
    return len(os.fsencode(name))


def length_problem(path: str) -> str | None:
    """Why the system would refuse `path` as too long (a name above `NAME_MAX`, the whole above `PATH_MAX`), or None.

    Checked on the resolved path, so a long name that does not exist yet is refused before anything is created.
    """
    unit = "UTF-16 units" if os.name == "nt" else "bytes"
    _, names = split_components(path, current_flavor())
    for name in names:
        size = _units(name)
        if size > NAME_MAX:
            return f"a name of {size} {unit} (at most {NAME_MAX})"
    size = _units(path)
    if size >= PATH_MAX:
        return f"{size} {unit} in all (at most {PATH_MAX - 1})"
    return None


def fd_real_path(fd: int) -> str | None:
    """The path the system reports for an open descriptor, or None where it cannot say (then inodes are compared)."""
    if sys.platform.startswith("linux"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return target if target.startswith("/") else None
    if sys.platform == "darwin":
        try:
            import fcntl

            raw = fcntl.fcntl(fd, 50, b"\0" * 1024)  # F_GETPATH
        except OSError:
            return None
        return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    return None


def short_alias_problem(
    resolved: str,
    root: str,
    *,
    flavor: Flavor | None = None,
    listdir: Callable[[str], list[str]] = os.listdir,
    lexists: Callable[[str], bool] = os.path.lexists,
) -> str | None:
    """On Windows, a name below `root` holding `~` must be listed in its directory, not exist only as an 8.3 alias
    (`GIT~1` for `.git`), which would walk around the name rules. None when every such name is a real entry."""
    flavor = flavor or current_flavor()
    if flavor != "windows":
        return None
    _, names = split_components(resolved, "windows")
    _, root_names = split_components(root, "windows")
    current = root
    for name in names[len(root_names) :]:
        if "~" in name:
            try:
                listed = listdir(current)
            except OSError:
                listed = []
            if name not in listed and lexists(ntpath.join(current, name)):
                return f"{name!r} is a short-name alias"
        current = ntpath.join(current, name)
    return None


def foreign_drive_problem(path: str, base: str, roots: list[str]) -> str | None:
    """On Windows, a path on a drive or share that no root is on is refused before anything is probed there."""
    joined = ntpath.join(base, path.replace("/", "\\"))
    drive = fold(ntpath.splitdrive(joined)[0])
    if any(fold(ntpath.splitdrive(root)[0]) == drive for root in roots):
        return None
    return "on a drive no root is on"
