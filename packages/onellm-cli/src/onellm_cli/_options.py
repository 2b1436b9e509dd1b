"""Reading option values: inputs, money, durations and dates, and the grant flags.

Every mistake is a `CliError` with exit code 2 (the command line is wrong) naming the option, except a file an option
names that cannot be read, which is exit code 3 (a file problem).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onellm_cli._errors import EXIT_SETUP, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities, CommandRequest

__all__ = [
    "ALL",
    "Grants",
    "parse_grants",
    "parse_inputs",
    "parse_max_cost",
    "parse_since",
    "read_option_file",
]

ALL = ":all:"
"""What `main` puts in place of a bare `--allow-shell` or `--allow-net` (a flag given without `=`)."""

_MAX_OPTION_FILE = 64 * 1024 * 1024


def read_option_file(option: str, name: str) -> str:
    """The text of the file an `@file` value names (UTF-8); `@-` reads standard input."""
    if not name:
        raise CliError(f"{option}: '@' must be followed by a file name (or '-' for standard input)", EXIT_USAGE)
    path = Path(name)
    try:
        if name == "-":
            import sys

            data = sys.stdin.buffer.read(_MAX_OPTION_FILE + 1)
        else:
            with path.open("rb") as handle:
                data = handle.read(_MAX_OPTION_FILE + 1)
    except OSError as error:
        raise CliError(f"{option}: cannot read {name}: {error.strerror or error}", EXIT_SETUP) from None
    if len(data) > _MAX_OPTION_FILE:
        raise CliError(f"{option}: {name} is larger than {_MAX_OPTION_FILE // (1024 * 1024)} MiB", EXIT_SETUP)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{option}: {name} is not UTF-8 text (byte {error.start})", EXIT_SETUP) from None


def parse_inputs(pairs: Sequence[str], json_values: Sequence[str]) -> dict[str, Any]:
    """The run's inputs: each `--input-json` object in order, then each `--input k=v` (or `k=@file`) over them.

    Values of `--input` are strings; `--input-json` keeps JSON types (numbers as exact decimals).
    """
    import msgspec

    inputs: dict[str, Any] = {}
    decoder = msgspec.json.Decoder(float_hook=Decimal)
    for raw in json_values:
        text = read_option_file("--input-json", raw[1:]) if raw.startswith("@") else raw
        where = raw if raw.startswith("@") else "the value"
        try:
            value = decoder.decode(text.encode("utf-8"))
        except msgspec.DecodeError as error:
            raise CliError(f"--input-json: {where} is not JSON ({error})", EXIT_USAGE) from None
        if not isinstance(value, dict):
            raise CliError(f"--input-json: {where} is a JSON {_json_kind(value)}, not an object", EXIT_USAGE)
        inputs.update(value)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise CliError(f"--input {pair!r}: expected name=value (or name=@file)", EXIT_USAGE)
        key = key.strip()
        if not key:
            raise CliError(f"--input {pair!r}: the name before '=' is empty", EXIT_USAGE)
        inputs[key] = read_option_file(f"--input {key}", value[1:]) if value.startswith("@") else value
    return inputs


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def parse_max_cost(text: str | None) -> Decimal | None:
    """`--max-cost` in US dollars: a plain decimal number, zero or more."""
    if text is None:
        return None
    cleaned = text.strip().removeprefix("$")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise CliError(f"--max-cost {text!r}: expected an amount in US dollars, such as 0.50", EXIT_USAGE) from None
    if not value.is_finite() or value < 0:
        raise CliError(f"--max-cost {text!r}: expected an amount of zero or more", EXIT_USAGE)
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, now: Callable[[], datetime] | None = None) -> datetime | None:
    """`--since`: a duration back from now (`90m`, `24h`, `7d`, `2w`) or a date or time (`2026-12-01`,
    `2026-12-01T09:30:00Z`; a date or a time without a zone is UTC). Returns an aware UTC datetime."""
    if text is None:
        return None
    moment = (now or (lambda: datetime.now(UTC)))()
    match = _DURATION.match(text)
    if match is not None:
        amount, unit = int(match.group(1)), match.group(2)
        try:
            return moment - timedelta(**{_UNITS[unit]: amount})
        except OverflowError:
            return datetime.min.replace(tzinfo=UTC)
    cleaned = text.strip()
    try:
        if len(cleaned) == 10:
            day = date.fromisoformat(cleaned)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        stamp = datetime.fromisoformat(cleaned.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CliError(
            f"--since {text!r}: expected a duration such as 24h, 7d or 2w, or a date such as 2026-12-01", EXIT_USAGE
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC)


ShellApprover = Callable[["CommandRequest"], Any]


@dataclass(frozen=True, slots=True)
class Grants:
    """What the grant flags asked for (files under the root are always granted)."""

    shell: str | None = None
    """`any`, `ask`, `list` or None."""
    programs: tuple[str, ...] = ()
    """The allow-list of `--allow-shell=a,b`."""
    network: str | None = None
    """`any`, `list` or None."""
    hosts: tuple[str, ...] = ()
    """The hosts of `--allow-net=a,b`."""

    def describe(self) -> str:
        """The grants as the flags that give them, for messages."""
        flags: list[str] = []
        if self.shell == "any":
            flags.append("--allow-shell")
        elif self.shell == "ask":
            flags.append("--allow-shell=ask")
        elif self.shell == "list":
            flags.append("--allow-shell=" + ",".join(self.programs))
        if self.network == "any":
            flags.append("--allow-net")
        elif self.network == "list":
            flags.append("--allow-net=" + ",".join(self.hosts))
        return " ".join(flags) or "no grant flags"

    def capabilities(self, root: Path, approver: ShellApprover | None) -> Capabilities:
        """The `Capabilities` these flags give: read and write under `root`, plus the shell and network asked for.

        Raises:
            CliError: an allow-list entry or host is malformed (exit code 2).
        """
        from onellm.capabilities import Capabilities

        caps = Capabilities.files(root)
        if self.shell == "any":
            caps = caps + Capabilities.shell()
        elif self.shell == "ask":
            if approver is None:
                raise CliError("--allow-shell=ask needs a terminal approver", EXIT_USAGE)
            caps = caps + Capabilities.shell_with_approval(approver)
        elif self.shell == "list":
            try:
                caps = caps + Capabilities.shell_commands(*self.programs)
            except ValueError as error:
                raise CliError(f"--allow-shell: {error}", EXIT_USAGE) from None
        if self.network == "any":
            caps = caps + Capabilities.any_public_hosts()
        elif self.network == "list":
            try:
                caps = caps + Capabilities.network(*self.hosts)
            except ValueError as error:
                raise CliError(f"--allow-net: {error}", EXIT_USAGE) from None
        return caps.with_working_directory(root)


def _entries(option: str, values: Sequence[str]) -> list[str]:
    found: list[str] = []
    for value in values:
        if value == ALL:
            continue
        parts = [p.strip() for p in value.split(",")]
        if not any(parts):
            raise CliError(f"{option}=: name at least one entry, or give {option} alone", EXIT_USAGE)
        if any(not p for p in parts):
            raise CliError(f"{option}={value}: an entry between commas is empty", EXIT_USAGE)
        found.extend(parts)
    return list(dict.fromkeys(found))


def parse_grants(shell: Sequence[str] | None, net: Sequence[str] | None) -> Grants:
    """The grants of `--allow-shell[=...]` and `--allow-net[=...]` (each may be repeated; the widest form wins).

    Raises:
        CliError: an empty list, or `ask` mixed with program names (exit code 2).
    """
    shell = list(shell or ())
    net = list(net or ())
    shell_mode: str | None = None
    programs: tuple[str, ...] = ()
    if shell:
        names = _entries("--allow-shell", shell)
        if ALL in shell:
            shell_mode = "any"
        elif "ask" in names:
            if len(names) > 1:
                raise CliError(
                    "--allow-shell=ask confirms every command at the terminal; it takes no program names "
                    f"(got {', '.join(n for n in names if n != 'ask')})",
                    EXIT_USAGE,
                )
            shell_mode = "ask"
        else:
            shell_mode = "list"
            programs = tuple(names)
    net_mode: str | None = None
    hosts: tuple[str, ...] = ()
    if net:
        entries = _entries("--allow-net", net)
        if ALL in net:
            net_mode = "any"
        else:
            net_mode = "list"
            hosts = tuple(entries)
    grants = Grants(shell=shell_mode, programs=programs, network=net_mode, hosts=hosts)
    grants.capabilities(Path.cwd(), _no_approver)  # a malformed entry is a wrong command line: say so now
    return grants


def _no_approver(request: CommandRequest) -> bool:
    return False
