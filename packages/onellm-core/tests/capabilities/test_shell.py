"""The shell grant: every line is checked before anything runs, and the runner keeps its promises (environment, output
limit, timeout, killing the whole process group)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import anyio
import pytest

from onellm import Capabilities, CapabilityDeniedError, CapabilityMissingError
from onellm.capabilities import CommandRequest, ShellOptions

pytestmark = pytest.mark.skipif(os.name == "nt", reason="posix shell semantics")

ENTRIES = (
    "ls",
    "echo",
    "git status",
    "cat",
    "sh",
    "cmd /c echo",
    "powershell -File x.ps1",
    "run.bat",
    "nonexistent-tool",
    "bin/tool",
    "only-in-cwd",
)

# (line, expected): expected is (program, args) when allowed, or "!rule" when refused.
LINES: list[tuple[str, object]] = [
    ("ls", ("ls", [])),
    ("ls -la", ("ls", ["-la"])),
    ("ls 'a;b'", ("ls", ["a;b"])),
    ('ls "a|b"', ("ls", ["a|b"])),
    ("ls a\\;b", ("ls", ["a;b"])),
    ("ls a\\ b", ("ls", ["a b"])),
    ("echo 'hello world'", ("echo", ["hello world"])),
    ('echo "it\'s"', ("echo", ["it's"])),
    ("echo a=b", ("echo", ["a=b"])),
    ("echo --opt=x", ("echo", ["--opt=x"])),
    ("echo 'a'\"b\"c", ("echo", ["abc"])),
    ("echo ''", ("echo", [""])),
    ("echo HEAD~1", ("echo", ["HEAD~1"])),
    ("echo a#b", ("echo", ["a#b"])),
    ("echo 100%", ("echo", ["100%"])),
    ("echo '$HOME'", ("echo", ["$HOME"])),
    ("echo '`id`'", ("echo", ["`id`"])),
    ("echo 'a && b'", ("echo", ["a && b"])),
    ("echo '*.py'", ("echo", ["*.py"])),
    ("echo \\*", ("echo", ["*"])),
    ('echo "a\\"b"', ("echo", ['a"b'])),
    ('echo "\\$HOME"', ("echo", ["$HOME"])),
    ("echo\ta", ("echo", ["a"])),
    ("  echo   a    b  ", ("echo", ["a", "b"])),
    ("echo é 😀", ("echo", ["é", "😀"])),
    ("git status", ("git", ["status"])),
    ("git status --porcelain", ("git", ["status", "--porcelain"])),
    ("cat -- -n", ("cat", ["--", "-n"])),
    ("sh -c 'exit 0'", ("sh", ["-c", "exit 0"])),
    ("cmd /c echo hi", ("cmd", ["/c", "echo", "hi"])),
    # shell syntax, refused before anything runs
    ("ls; rm -rf /", "!shell-syntax"),
    ("ls && whoami", "!shell-syntax"),
    ("ls || whoami", "!shell-syntax"),
    ("ls | grep a", "!shell-syntax"),
    ("ls > out", "!shell-syntax"),
    ("ls < in", "!shell-syntax"),
    ("ls >> out", "!shell-syntax"),
    ("ls 2>&1", "!shell-syntax"),
    ("ls &", "!shell-syntax"),
    ("echo `whoami`", "!shell-syntax"),
    ("echo $(whoami)", "!shell-syntax"),
    ("echo $HOME", "!shell-syntax"),
    ("echo ${HOME}", "!shell-syntax"),
    ('echo "$HOME"', "!shell-syntax"),
    ('echo "`id`"', "!shell-syntax"),
    ("echo $'\\x41'", "!shell-syntax"),
    ("echo *", "!shell-syntax"),
    ("echo a?", "!shell-syntax"),
    ("echo [ab]", "!shell-syntax"),
    ("echo {a,b}", "!shell-syntax"),
    ("(ls)", "!shell-syntax"),
    ("ls <(cat x)", "!shell-syntax"),
    ("echo ~", "!shell-syntax"),
    ("echo ~/x", "!shell-syntax"),
    ("# ls", "!shell-syntax"),
    ("! ls", "!shell-syntax"),
    ("echo 'unclosed", "!shell-syntax"),
    ('echo "unclosed', "!shell-syntax"),
    ("echo trailing\\", "!shell-syntax"),
    ("ls\nwhoami", "!shell-syntax"),
    ("ls\rwhoami", "!shell-syntax"),
    ("echo a\x00b", "!shell-syntax"),
    ("echo \x1b[31m", "!shell-syntax"),
    ("echo '\x07'", "!shell-syntax"),
    ("FOO=bar ls", "!shell-syntax"),
    ("PATH=/tmp ls", "!shell-syntax"),
    ("", "!shell-syntax"),
    ("   ", "!shell-syntax"),
    # not on the allow-list
    ("git push", "!not-allow-listed"),
    ("git statusx", "!not-allow-listed"),
    ("git -c core.pager=sh status", "!not-allow-listed"),
    ("git", "!not-allow-listed"),
    ("rm -rf /", "!not-allow-listed"),
    ("gits status", "!not-allow-listed"),
    ("whoami", "!not-allow-listed"),
    ("/bin/ls", "!not-allow-listed"),
    ("./ls", "!not-allow-listed"),
    ("LS", "!not-allow-listed"),
    ("'ls;whoami'", "!not-allow-listed"),
    ("cmd /k echo", "!not-allow-listed"),
    ("powershell -Command x", "!not-allow-listed"),
    # programs that re-read their arguments
    ('cmd /c echo "hi & whoami"', "!reinterpreter"),
    ("cmd /c echo hi^", "!reinterpreter"),
    ("cmd /c echo 100%PATH%", "!reinterpreter"),
    ("cmd /c echo 'a|b'", "!reinterpreter"),
    ("powershell -File x.ps1 '$(calc)'", "!reinterpreter"),
    ("powershell -File x.ps1 'a;b'", "!reinterpreter"),
    ("run.bat 'a&b'", "!reinterpreter"),
    # lookup on PATH only
    ("nonexistent-tool", "!program-not-found"),
    ("only-in-cwd", "!program-not-found"),
    ("bin/tool", "!program-path"),
]


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with the listed programs (real ones linked where they exist), plus relative entries that must be ignored.

    The directory sits beside `tmp_path`, not in it: tests grant files under `tmp_path`, and a PATH directory the
    file tools can write is not searched.
    """
    bin_dir = tmp_path.parent / f"{tmp_path.name}-bin"
    bin_dir.mkdir()
    for name in ("ls", "echo", "git", "cat", "sh", "printenv", "sleep", "head"):
        real = shutil.which(name)
        if real:
            os.symlink(real, bin_dir / name)
    for name in ("cmd", "powershell", "run.bat"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    cwd = tmp_path / "cwd"
    (cwd / "bin").mkdir(parents=True)
    for name in ("only-in-cwd", "bin/tool"):
        (cwd / name).write_text("#!/bin/sh\n")
        (cwd / name).chmod(0o755)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", "bin", str(bin_dir)]))
    return bin_dir


def test_the_suite_is_large_enough() -> None:
    assert len(LINES) >= 60


@pytest.mark.parametrize(("line", "expected"), LINES)
def test_command_line(fake_bin: Path, line: str, expected: object) -> None:
    caps = Capabilities.shell_commands(*ENTRIES)
    if isinstance(expected, str):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.parse_command(line)
        assert info.value.rule == expected[1:], str(info.value)
        assert info.value.target == line
    else:
        assert caps.parse_command(line) == expected


def test_shell_off_refuses_every_line() -> None:
    for caps in (Capabilities(), Capabilities.files(), Capabilities.network("example.com")):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.parse_command("ls")
        assert info.value.rule == "shell-off"


def test_open_shell_gives_the_line_to_the_platform_shell() -> None:
    assert Capabilities.shell().parse_command("ls | grep x && echo $HOME") == (
        "/bin/sh",
        ["-c", "ls | grep x && echo $HOME"],
    )


def test_approval_grants_any_program_but_still_no_shell_syntax(fake_bin: Path) -> None:
    caps = Capabilities.shell_with_approval(lambda request: True)
    assert caps.parse_command("printenv HOME") == ("printenv", ["HOME"])
    with pytest.raises(CapabilityDeniedError) as info:
        caps.parse_command("printenv HOME; id")
    assert info.value.rule == "shell-syntax"
    assert Capabilities.shell_with_loop_approval().parse_command("ls") == ("ls", [])


def test_entries_with_shell_syntax_are_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="entry 1"):
        Capabilities.shell_commands("ls", "git status; rm")
    with pytest.raises(ValueError, match="empty"):
        Capabilities.shell_commands("  ")


def test_metacharacters_inside_arguments_are_plain_text(fake_bin: Path, tmp_path: Path) -> None:
    caps = Capabilities.files(tmp_path) + Capabilities.shell_commands("echo")

    async def main() -> str:
        result = await caps.run_command("echo 'a;b' \"c|d\" 'e$(f)'", working_directory=tmp_path)
        return result.stdout

    assert anyio.run(main) == "a;b c|d e$(f)\n"


def test_display_escapes_control_characters() -> None:
    request = CommandRequest("echo", ("a\x1b[2Jb", "c\u202ed"), "/w\nx", "line", {"V": "\x07"})
    shown = request.display()
    assert "\x1b" not in shown
    assert "\\u001B" in shown
    assert "\\u202E" in shown
    assert "\\u000A" in shown
    assert "\\u0007" in shown
    hidden = CommandRequest("rm", ("a\u200bb", "\u2066x\u2069", "t\U000e0041"), "/w", "line").display()
    assert "\\u200B" in hidden
    assert "\\u2066" in hidden
    assert "\\U000E0041" in hidden


# --------------------------------------------------------------------------------------------------------- running


@pytest.fixture
def runner(fake_bin: Path, tmp_path: Path) -> Capabilities:
    return Capabilities.files(tmp_path) + Capabilities.shell_commands("echo", "sh", "printenv", "cat")


@pytest.mark.anyio
async def test_run_returns_output_and_exit_code(runner: Capabilities, tmp_path: Path) -> None:
    result = await runner.run_command("sh -c 'echo out; echo err >&2; exit 3'", working_directory=tmp_path)
    assert result.exit_code == 3
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert not result.timed_out
    assert not result.truncated


@pytest.mark.anyio
async def test_output_keeps_head_and_tail(runner: Capabilities, tmp_path: Path) -> None:
    script = "i=0; while [ $i -lt 4000 ]; do echo line$i; i=$((i+1)); done"
    result = await runner.run_command(f"sh -c '{script}'", working_directory=tmp_path)
    assert result.stdout.startswith("line0\nline1\n")
    assert result.stdout.endswith("line3998\nline3999\n")
    assert "bytes elided" in result.stdout
    assert result.truncated
    assert result.stdout_bytes > 10 * 1024
    assert len(result.stdout.encode()) < 10 * 1024 + 100


@pytest.mark.anyio
async def test_output_limit_is_configurable(runner: Capabilities, tmp_path: Path) -> None:
    options = ShellOptions(output_limit_bytes=100)
    result = await runner.run_command("sh -c 'head -c 1000 /dev/zero'", working_directory=tmp_path, options=options)
    assert result.stdout_bytes == 1000
    assert len(result.stdout.replace("\x00", "")) < 60


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.anyio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_timeout_kills_the_whole_process_group(runner: Capabilities, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    line = f"sh -c 'sleep 30 & echo $! > {pid_file}; sleep 30'"
    started = time.monotonic()
    result = await runner.run_command(line, working_directory=tmp_path, timeout_seconds=0.5)
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert result.exit_code is None
    child = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        await anyio.sleep(0.05)
    assert not _alive(child)


@pytest.mark.anyio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_leftover_background_children_are_killed_when_the_program_exits(
    runner: Capabilities, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    result = await runner.run_command(
        f"sh -c 'sleep 30 > /dev/null 2>&1 & echo $! > {pid_file}'", working_directory=tmp_path, timeout_seconds=10
    )
    assert result.exit_code == 0
    child = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        await anyio.sleep(0.05)
    assert not _alive(child)


@pytest.mark.anyio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_cancellation_kills_the_process(runner: Capabilities, tmp_path: Path) -> None:
    pid_file = tmp_path / "main.pid"
    with anyio.move_on_after(0.5):
        await runner.run_command(f"sh -c 'echo $$ > {pid_file}; sleep 30'", working_directory=tmp_path)
    pid = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(pid):
            break
        await anyio.sleep(0.05)
    assert not _alive(pid)


@pytest.mark.anyio
@pytest.mark.parametrize("seconds", [float("nan"), 0.0, -1.0])
async def test_a_timeout_that_is_not_a_positive_number_is_refused(
    runner: Capabilities, tmp_path: Path, seconds: float
) -> None:
    with pytest.raises(ValueError, match="timeout_seconds must be positive"):
        await runner.run_command("echo hi", working_directory=tmp_path, timeout_seconds=seconds)


def test_default_timeout_is_thirty_seconds_and_capped() -> None:
    options = ShellOptions()
    assert options.default_timeout_seconds == 30
    assert options.output_limit_bytes == 10 * 1024
    assert options.max_timeout_seconds >= options.default_timeout_seconds


@pytest.mark.anyio
async def test_allow_listed_commands_get_a_minimal_environment(
    runner: Capabilities, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIN_SETTING", "1")
    monkeypatch.setenv("MY_API_KEY", "sk-1")
    monkeypatch.setenv("LC_ALL", "C")
    result = await runner.run_command("printenv", working_directory=tmp_path)
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert "PATH" in names
    assert "LC_ALL" in names
    assert "PLAIN_SETTING" not in names
    assert "MY_API_KEY" not in names
    assert names <= {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "TERM",
        "TZ",
        "TMPDIR",
        "LC_ALL",
        "PWD",
        "SHLVL",
        "_",
    } | {n for n in names if n.startswith("LC_")}
    options = ShellOptions(inherited_environment_names=("PLAIN_SETTING",))
    result = await runner.run_command("printenv PLAIN_SETTING", working_directory=tmp_path, options=options)
    assert result.stdout == "1\n"


@pytest.mark.anyio
async def test_open_shell_strips_secrets_by_name(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = Capabilities.files(tmp_path) + Capabilities.shell()
    for name in (
        "MY_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "CLIENT_SECRET",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
    ):
        monkeypatch.setenv(name, "hidden")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    result = await caps.run_command("printenv", working_directory=tmp_path)
    assert "PLAIN_SETTING=visible" in result.stdout
    assert "hidden" not in result.stdout
    kept = await caps.run_command("printenv", working_directory=tmp_path, options=ShellOptions(inherit_secrets=True))
    assert "MY_API_KEY=hidden" in kept.stdout


@pytest.mark.anyio
async def test_model_variables_only_when_named(runner: Capabilities, tmp_path: Path) -> None:
    with pytest.raises(CapabilityDeniedError) as info:
        await runner.run_command("printenv GIT_PAGER", working_directory=tmp_path, environment={"GIT_PAGER": "sh"})
    assert info.value.rule == "environment"
    options = ShellOptions(model_environment_names=("GREETING",))
    result = await runner.run_command(
        "printenv GREETING", working_directory=tmp_path, environment={"GREETING": "hi"}, options=options
    )
    assert result.stdout == "hi\n"
    for name in ("HOME", "PAGER", "PYTHONPATH", "GIT_CONFIG_COUNT"):
        with pytest.raises(CapabilityDeniedError):
            runner.prepare_command("printenv", working_directory=tmp_path, environment={name: "x"}, options=options)


def test_open_shell_model_may_not_replace_the_loader(fake_bin: Path, tmp_path: Path) -> None:
    caps = Capabilities.files(tmp_path) + Capabilities.shell()
    for name in ("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "BASH_ENV"):
        with pytest.raises(CapabilityDeniedError) as info:
            caps.prepare_command("true", working_directory=tmp_path, environment={name: "x"})
        assert info.value.rule == "environment"
    prepared = caps.prepare_command("true", working_directory=tmp_path, environment={"FOO": "1"})
    assert prepared.environment["FOO"] == "1"


def test_working_directory_needs_read_access(fake_bin: Path, tmp_path: Path) -> None:
    caps = Capabilities.read_only_files(tmp_path / "cwd") + Capabilities.shell_commands("ls")
    assert caps.prepare_command("ls", working_directory=tmp_path / "cwd").working_directory == str(tmp_path / "cwd")
    with pytest.raises(CapabilityDeniedError) as info:
        caps.prepare_command("ls", working_directory=tmp_path)
    assert info.value.rule == "outside-roots"


@pytest.mark.anyio
async def test_a_denied_approval_runs_nothing(fake_bin: Path, tmp_path: Path) -> None:
    seen: list[CommandRequest] = []

    def approver(request: CommandRequest) -> bool:
        seen.append(request)
        return False

    caps = Capabilities.files(tmp_path) + Capabilities.shell_with_approval(approver)
    marker = tmp_path / "ran"
    with pytest.raises(CapabilityDeniedError) as info:
        await caps.run_command(f"sh -c 'touch {marker}'", working_directory=tmp_path)
    assert info.value.rule == "approval-denied"
    assert not marker.exists()
    assert seen[0].program == "sh"
    assert seen[0].args == ("-c", f"touch {marker}")
    assert seen[0].working_directory == str(tmp_path)


@pytest.mark.anyio
async def test_async_approvers_and_both_sides_of_an_intersection_are_asked(fake_bin: Path, tmp_path: Path) -> None:
    asked: list[str] = []

    async def first(request: CommandRequest) -> bool:
        asked.append("first")
        return True

    def second(request: CommandRequest) -> bool:
        asked.append("second")
        return True

    a = Capabilities.files(tmp_path) + Capabilities.shell_with_approval(first)
    b = Capabilities.files(tmp_path) + Capabilities.shell_with_approval(second)
    child = a.intersect(b)
    result = await child.run_command("echo ok", working_directory=tmp_path)
    assert result.stdout == "ok\n"
    assert asked == ["first", "second"]


@pytest.mark.anyio
async def test_loop_approval_holds_until_approved(fake_bin: Path, tmp_path: Path) -> None:
    caps = Capabilities.files(tmp_path) + Capabilities.shell_with_loop_approval()
    prepared = caps.prepare_command("echo hi", working_directory=tmp_path)
    assert prepared.needs_approval
    assert prepared.loop_approval
    # Outside the agent loop nothing holds the call: a clear error names what runs such a grant.
    with pytest.raises(CapabilityMissingError) as info:
        await caps.run_command("echo hi", working_directory=tmp_path)
    assert "needs the agent loop, which holds the call for approval" in str(info.value)
    assert "shell_with_approval(approver)" in str(info.value)
    result = await caps.run_command("echo hi", working_directory=tmp_path, approved=True)
    assert result.stdout == "hi\n"


def test_the_agent_loop_asks_whether_to_hold_a_command(fake_bin: Path, tmp_path: Path) -> None:
    """`decide_command` makes every check and answers hold / ask / run instead of raising for a held command."""
    (tmp_path / "sub").mkdir()
    loop = Capabilities.files(tmp_path) + Capabilities.shell_with_loop_approval()
    decision = loop.decide_command("echo 'hi there'", working_directory="sub", base=tmp_path)
    assert (decision.hold, decision.ask) == (True, False)
    assert decision.request == CommandRequest("echo", ("hi there",), str(tmp_path / "sub"), "echo 'hi there'", {})
    assert decision.request.display() == f"echo hi there  (in {tmp_path / 'sub'})"
    # A refused command is refused here too, before anything is held.
    with pytest.raises(CapabilityDeniedError) as refused:
        loop.decide_command("echo hi; rm -rf /", base=tmp_path)
    assert refused.value.rule == "shell-syntax"
    with pytest.raises(CapabilityDeniedError) as outside:
        loop.decide_command("echo hi", working_directory="..", base=tmp_path)
    assert outside.value.rule == "outside-roots"

    def approver(request: CommandRequest) -> bool:
        return True

    asked = Capabilities.files(tmp_path) + Capabilities.shell_with_approval(approver)
    assert (asked.decide_command("echo hi", base=tmp_path).hold, asked.decide_command("echo hi").ask) == (False, True)
    listed = Capabilities.files(tmp_path) + Capabilities.shell_commands("echo")
    plain = listed.decide_command("echo hi", base=tmp_path)
    assert (plain.hold, plain.ask) == (False, False)
    both = Capabilities.shell_commands("echo").intersect(Capabilities.shell_with_loop_approval())
    assert (Capabilities.files(tmp_path) + both).decide_command("echo", base=tmp_path).hold


# Every line the splitter accepts must split exactly as a POSIX shell's quoting would (checked against `shlex`), and no
# accepted word may carry a character the splitter refuses unquoted unless the line quoted or escaped it.
@pytest.mark.parametrize("seed", range(3))
def test_splitter_agrees_with_posix_quoting(seed: int) -> None:
    import random
    import shlex

    from onellm.capabilities._shell import ShellSyntaxError, split_command_line

    alphabet = "ab -'\"\\;|&$`*?[]{}()<>~#!=\t%^:/.\n"
    rng = random.Random(seed)
    accepted = 0
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14)))
        try:
            words = split_command_line(line)
        except ShellSyntaxError:
            continue
        accepted += 1
        assert words == shlex.split(line, posix=True), line
    assert accepted > 50
