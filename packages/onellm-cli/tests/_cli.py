"""The `onellm` command run as a real process: its console script, a clean environment (no provider keys, no
`ONELLM_*` settings), a temporary working directory, and scripted model answers through `ONELLM_CLI_SCRIPT`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(sys.executable).with_name("onellm.exe" if os.name == "nt" else "onellm")


def _command() -> list[str]:
    if SCRIPT.is_file():
        return [str(SCRIPT)]
    return [sys.executable, "-m", "onellm_cli"]


@dataclass
class Done:
    """A finished command: exit code, standard output and standard error."""

    code: int
    out: str
    err: str

    @property
    def last(self) -> str:
        """The last line of standard error."""
        lines = self.err.rstrip("\n").splitlines()
        return lines[-1] if lines else ""

    @property
    def err_lines(self) -> list[str]:
        return self.err.rstrip("\n").splitlines()

    def __repr__(self) -> str:
        return f"Done(code={self.code}, out={self.out!r}, err={self.err!r})"


class Cli:
    """Runs `onellm` in `cwd` with a clean environment."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.endswith(("_API_KEY", "_KEY", "_TOKEN")) and not k.startswith(("ONELLM_", "_ONELLM"))
        }
        env["PYTHONIOENCODING"] = "utf-8"
        env["NO_COLOR"] = "1"
        self.env = env

    def script(self, decisions: dict[str, Any] | None = None, **providers: list[dict[str, Any]]) -> Path:
        """Answer model calls of these providers from these steps, and decisions engines' questions from
        `decisions` (see `onellm_cli._scripted`)."""
        path = self.cwd / "script.json"
        data: dict[str, Any] = {"providers": providers}
        if decisions is not None:
            data["decisions"] = decisions
        path.write_text(json.dumps(data), encoding="utf-8")
        self.env["ONELLM_CLI_SCRIPT"] = str(path)
        return path

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 60
    ) -> Done:
        done = subprocess.run(
            [*_command(), *args],
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
        )
        return Done(done.returncode, done.stdout, done.stderr)

    def python(self, code: str, *args: str, input: str | None = None) -> Done:
        """Run `code` (which ends by calling `onellm_cli.main()`) with `args` as the command line."""
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=self.cwd,
            env=self.env,
            input=input or "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=60,
        )
        return Done(done.returncode, done.stdout, done.stderr)

    def start(self, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[str]:
        """Start `onellm` and leave it running (for Ctrl-C tests)."""
        return subprocess.Popen(
            [*_command(), *args],
            cwd=self.cwd,
            env=self.env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    @property
    def instances(self) -> Path:
        return self.cwd / ".onellm" / "instances"

    def saved(self) -> list[Path]:
        """The instance files in the default state directory."""
        return sorted(self.instances.glob("*.yaml")) if self.instances.is_dir() else []


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


HELLO_FLOW = """\
model: claude-sonnet
initialPrompts:
  - user:
      - text: "Say hello to {{ .inputs.name }}."
"""


def flow(cli: Cli, text: str = HELLO_FLOW, name: str = "hello.flow") -> Path:
    return write(cli.cwd / name, text)


def lines(text: str) -> list[str]:
    return text.rstrip("\n").splitlines()


def no_traceback(done: Done) -> None:
    assert "Traceback" not in done.err, done.err
    assert "Traceback" not in done.out, done.out


def args(*items: str) -> Sequence[str]:
    return items
