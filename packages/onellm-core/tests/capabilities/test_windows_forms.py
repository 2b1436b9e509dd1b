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
