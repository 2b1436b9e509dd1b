"""Windows and macOS path rules, tested on the comparison functions so they run on every platform.

The resolver itself only meets these forms on Windows; what can be checked anywhere is how names and paths compare and
which forms are refused before anything is probed.
"""

from __future__ import annotations

import pytest

from onellm.capabilities._paths import is_within, name_key, path_key, windows_form_problem
from onellm.capabilities._shell import minimal_environment, program_stem, reinterpreter_problem


@pytest.mark.parametrize(
    ("candidate", "root", "flavor", "inside"),
    [
        (r"C:\work\a.txt", r"C:\work", "windows", True),
        (r"c:\WORK\A.txt", r"C:\work", "windows", True),
        (r"C:/work/sub/x", r"C:\work", "windows", True),
        (r"C:\work2\a.txt", r"C:\work", "windows", False),
        (r"C:\wor", r"C:\work", "windows", False),
        (r"D:\work\a.txt", r"C:\work", "windows", False),
        (r"C:\work.\a.txt", r"C:\work", "windows", True),
        (r"C:\work \a.txt", r"C:\work", "windows", True),
        (r"C:\work\a.txt", "\\\\?\\C:\\work", "windows", True),
        ("\\\\?\\C:\\work\\a.txt", r"C:\work", "windows", True),
        ("\\\\server\\share\\x", "\\\\?\\UNC\\server\\share", "windows", True),
        (r"C:\Wor\u0131k"[:0] + "C:\\WORK\u212a", "C:\\workk", "windows", True),
        ("C:\\\u017fecret\\x", "C:\\secret", "windows", True),
        ("C:\\\u0131nfo\\x", "C:\\info", "windows", True),
        ("/Users/me/Work/a", "/Users/me/work", "darwin", True),
        ("/Users/me/work2/a", "/Users/me/work", "darwin", False),
        ("/Users/me/W\u0131rk", "/Users/me/wirk", "darwin", True),
        ("/home/me/Work/a", "/home/me/work", "posix", False),
        ("/home/me/work/a", "/home/me/work", "posix", True),
        ("/home/me/work", "/home/me/work", "posix", True),
        ("/home/me/work2", "/home/me/work", "posix", False),
        ("/", "/home", "posix", False),
    ],
)
def test_containment(candidate: str, root: str, flavor: str, inside: bool) -> None:
    assert is_within(candidate, root, flavor) is inside  # type: ignore[arg-type]


def test_extended_length_root_is_the_same_grant() -> None:
    assert path_key("\\\\?\\C:\\work", "windows") == path_key("C:\\work", "windows")
    assert path_key("C:\\Work.\\Sub ", "windows") == path_key("c:/work/sub", "windows")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        (".GIT", ".git"),
        (".Git.", ".git"),
        (".git ", ".git"),
        (".git. .", ".git"),
        ("CVS", "cvs"),
        (".ONELLM.", ".onellm"),
    ],
)
def test_name_keys_fold_case_and_trailing_dots(name: str, key: str) -> None:
    assert name_key(name) == key


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("C:foo", "drive-relative path"),
        ("\\foo", "rooted path without a drive"),
        ("/foo", "rooted path without a drive"),
        ("\\\\?\\C:\\work", "extended or device path form"),
        ("\\\\.\\C:\\work", "extended or device path form"),
        ("\\\\.\\PhysicalDrive0", "extended or device path form"),
        ("\\??\\C:\\work", "extended or device path form"),
        ("\\\\server\\share\\x", "network share path"),
        ("//server/share/x", "network share path"),
        ("file.txt:stream", "alternate data stream"),
        ("C:\\work\\file.txt::$DATA", "alternate data stream"),
        ("NUL", "device name"),
        ("nul.txt", "device name"),
        ("C:\\work\\CON", "device name"),
        ("sub\\aux.tar.gz", "device name"),
        ("COM1", "device name"),
        ("com9.log", "device name"),
        ("LPT0", "device name"),
        ("LPT\u00b9", "device name"),
        ("COM\u00b3.txt", "device name"),
        ("CONIN$", "device name"),
        ("prn .txt", "device name"),
        ("NUL.", "device name"),
        ("...", "name of only dots and spaces"),
        ("sub\\ . \\x", "name of only dots and spaces"),
    ],
)
def test_refused_windows_forms(path: str, problem: str) -> None:
    assert windows_form_problem(path) == problem


@pytest.mark.parametrize(
    "path",
    ["C:\\work\\a.txt", "a.txt", "sub\\b.txt", "sub/b.txt", "..\\x", "console.txt", "com10", "lpt", "nul_file", ".git"],
)
def test_accepted_windows_forms(path: str) -> None:
    assert windows_form_problem(path) is None


@pytest.mark.parametrize(
    ("program", "args", "refused"),
    [
        ("cmd", ["/c", "echo", "hi & whoami"], True),
        ("cmd.exe", ["/c", "echo", "a|b"], True),
        ("C:\\Windows\\System32\\cmd.exe", ["/c", "x^y"], True),
        ("CMD", ["/c", "%PATH%"], True),
        ("build.bat", ["!x!"], True),
        ("tool.CMD", ['"q"'], True),
        ("powershell", ["-File", "x.ps1", "$(calc)"], True),
        ("pwsh.exe", ["-File", "x.ps1", "a;b"], True),
        ("powershell", ["-File", "x.ps1", "{x}"], True),
        ("cmd", ["/c", "echo", "hi"], False),
        ("powershell", ["-NoProfile", "-File", "x.ps1", "plain"], False),
        ("git", ["log", "--format=%h|%s"], False),
    ],
)
def test_reinterpreters_refuse_command_characters(program: str, args: list[str], refused: bool) -> None:
    assert (reinterpreter_problem(program, args) is not None) is refused


def test_program_stem_drops_windows_extensions() -> None:
    assert program_stem("C:\\Git\\bin\\GIT.EXE") == "git"
    assert program_stem("/usr/bin/git") == "git"


def test_windows_minimal_environment() -> None:
    host = {
        "Path": "C:\\Windows",
        "PATHEXT": ".EXE",
        "SystemRoot": "C:\\Windows",
        "ComSpec": "cmd.exe",
        "TEMP": "t",
        "NUMBER_OF_PROCESSORS": "4",
        "OPENAI_API_KEY": "sk",
        "RANDOM_SETTING": "x",
    }
    env = minimal_environment(host, windows=True)
    assert set(env) == {"Path", "PATHEXT", "SystemRoot", "ComSpec", "TEMP", "NUMBER_OF_PROCESSORS"}


@pytest.mark.parametrize(
    ("path", "roots", "refused"),
    [
        ("D:\\data\\x", ["C:\\work"], True),
        ("c:\\work\\x", ["C:\\work"], False),
        ("sub\\x", ["C:\\work"], False),
        ("\\\\server\\share\\x", ["C:\\work"], True),
        ("\\\\server\\share\\x", ["\\\\SERVER\\share"], False),
        ("E:/x", ["C:\\work", "e:\\other"], False),
    ],
)
def test_a_drive_no_root_is_on(path: str, roots: list[str], refused: bool) -> None:
    from onellm.capabilities._paths import foreign_drive_problem

    assert (foreign_drive_problem(path, "C:\\work", roots) is not None) is refused


def test_short_name_aliases_are_refused_below_the_root() -> None:
    from onellm.capabilities._paths import short_alias_problem

    listing = {"C:\\work": [".git", "src", "my~file.txt"], "C:\\work\\src": ["a.py"]}
    existing = {"C:\\work\\GIT~1", "C:\\work\\my~file.txt", "C:\\work\\.git", "C:\\work\\src", "C:\\work\\SRC~1"}

    def listdir(path: str) -> list[str]:
        return listing.get(path, [])

    def lexists(path: str) -> bool:
        return path in existing

    def check(path: str) -> str | None:
        return short_alias_problem(path, "C:\\work", flavor="windows", listdir=listdir, lexists=lexists)

    assert check("C:\\work\\GIT~1\\config") == "'GIT~1' is a short-name alias"
    assert check("C:\\work\\SRC~1\\a.py") is not None
    assert check("C:\\work\\my~file.txt") is None, "a real name holding ~ is fine"
    assert check("C:\\work\\new~name.txt") is None, "a name that does not exist yet is not an alias"
    assert check("C:\\work\\src\\a.py") is None
    assert short_alias_problem("/w/GIT~1", "/w", flavor="posix") is None
