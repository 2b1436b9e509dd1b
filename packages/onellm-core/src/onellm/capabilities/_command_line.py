"""Reading a command line without a shell, and finding its program.

An allow-listed or approval-gated line never reaches a shell. It is split into words by the rules below, and anything a
shell would have given meaning to outside quotes (command separators, pipes, redirection, substitution, expansion,
globbing, comments) is refused before anything runs. Inside single quotes every character is plain text; inside double
quotes a `$` or a backtick is refused, because a reader would expect it to expand.

Programs are looked up on PATH only, never in the working directory; `entry_lists_git` tells whether an allow-list entry
can run git (the mark that arms the git rules of the file grant).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

__all__ = [
    "GIT_FRONT_ENDS",
    "LAUNCHERS",
    "ShellSyntaxError",
    "entry_lists_git",
    "lookup_program",
    "program_stem",
    "reinterpreter_problem",
    "search_path",
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


def search_path(path: str | None = None, *, trusted: Callable[[str], bool] | None = None) -> list[str]:
    """The absolute directories of PATH; empty and relative entries (the working directory) are skipped, and so is
    every directory `trusted` says no to (one the file tools can write, where a model could plant a program)."""
    raw = os.environ.get("PATH", os.defpath) if path is None else path
    dirs = [d for d in raw.split(os.pathsep) if d and os.path.isabs(d)]
    return [d for d in dirs if trusted(d)] if trusted is not None else dirs


def lookup_program(
    program: str, path: str | None = None, *, trusted: Callable[[str], bool] | None = None
) -> str | None:
    """Find a bare program name on PATH only, never in the working directory. Returns its absolute path or None.

    With `trusted`, directories it says no to are not searched, and a program whose real path (through links) it says
    no to is passed over for the next one on PATH.
    """
    if "/" in program or "\\" in program or program in ("", ".", ".."):
        return None
    dirs = search_path(path, trusted=trusted)
    if not dirs:
        return None
    if os.name == "nt":
        exts = [
            e for e in os.environ.get("PATHEXT", ".COM;.EXE").split(os.pathsep) if e.lower() not in (".bat", ".cmd")
        ]
        names = [program + ext for ext in exts]
    else:
        names = [program]
    for d in dirs:
        for name in names:
            candidate = os.path.join(d, name)
            if not _is_executable(candidate):
                continue
            if trusted is not None and not trusted(os.path.realpath(candidate)):
                continue
            return candidate
    return None


def _is_executable(candidate: str) -> bool:
    if os.name == "nt":
        return os.path.isfile(candidate)
    return os.path.isfile(candidate) and os.access(candidate, os.X_OK)
