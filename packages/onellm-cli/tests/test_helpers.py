"""The pure helpers behind the output and the options, tested directly because their edge cases (rounding, escaping,
durations) are cheaper to cover here than through a process each; the commands that use them are tested as processes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from onellm_cli._errors import CliError, classify, one_line
from onellm_cli._options import ALL, parse_grants, parse_inputs, parse_max_cost, parse_since
from onellm_cli._output import clip, money, safe_text


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        ("0", "$0.000000"),
        ("0.0000005", "$0.000001"),
        ("0.0000004999", "$0.000000"),
        ("0.0000015", "$0.000002"),
        ("0.0000025", "$0.000003"),
        ("-0.0000005", "-$0.000001"),
        ("-0.0000001", "$0.000000"),
        ("12.3456785", "$12.345679"),
        ("1E+3", "$1000.000000"),
    ],
)
def test_money_rounds_halves_away_from_zero(amount: str, shown: str) -> None:
    assert money(Decimal(amount)) == shown


def test_safe_text_escapes_what_could_drive_a_terminal() -> None:
    assert safe_text("plain café ✓") == "plain café ✓"
    assert (
        safe_text("a\x1b[31mb\x07\x9b\u202e\u2066\u2028z\n\t")
        == "a\\u001b[31mb\\u0007\\u009b\\u202e\\u2066\\u2028z\n\t"
    )
    assert clip("x\ny", 10) == "x\\ny"
    assert clip("abcdefghijkl", 5) == "abcd…"


def test_since_reads_durations_dates_and_times() -> None:
    now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    assert parse_since("24h", lambda: now) == now - timedelta(hours=24)
    assert parse_since(" 90m ", lambda: now) == now - timedelta(minutes=90)
    assert parse_since("2w", lambda: now) == now - timedelta(weeks=2)
    assert parse_since("2026-12-01", lambda: now) == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_since("2026-12-01T09:30:00+02:00", lambda: now) == datetime(2026, 12, 1, 7, 30, tzinfo=UTC)
    assert parse_since("2026-12-01T09:30:00", lambda: now) == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    assert parse_since("999999999999d", lambda: now) == datetime.min.replace(tzinfo=UTC)
    assert parse_since(None) is None
    for bad in ("", "7", "7y", "-1d", "soon"):
        with pytest.raises(CliError) as caught:
            parse_since(bad, lambda: now)
        assert caught.value.code == 2


def test_inputs_merge_json_then_pairs() -> None:
    assert parse_inputs(["a=1", "b=x=y"], ['{"a": 2, "c": 1.10}', '{"c": [1]}']) == {"a": "1", "b": "x=y", "c": [1]}
    assert parse_inputs([], ['{"n": 1.10}'])["n"] == Decimal("1.10")


def test_max_cost_and_grants() -> None:
    assert parse_max_cost(" $0.50 ") == Decimal("0.50")
    assert parse_max_cost(None) is None
    for bad in ("inf", "NaN", "-0.01", "abc", ""):
        with pytest.raises(CliError):
            parse_max_cost(bad)
    assert parse_grants(None, None).describe() == "no grant flags"
    both = parse_grants(["git", ALL], [ALL, "a.example.com"])
    assert (both.shell, both.network) == ("any", "any")
    listed = parse_grants(["git,python", "git status"], ["a.example.com,*.b.org"])
    assert listed.programs == ("git", "python", "git status")
    assert listed.describe() == "--allow-shell=git,python,git status --allow-net=a.example.com,*.b.org"
    assert parse_grants(["ask"], None).describe() == "--allow-shell=ask"


def test_failures_become_one_line_and_a_code() -> None:
    from onellm.errors import AuthError, BadDefinitionError, BudgetExceededError, BudgetKind, RateLimitError

    assert classify(BadDefinitionError("bad", file="a.yaml", line=2, column=3)) == (3, "a.yaml:2:3: bad")
    assert classify(AuthError("openai: No API key. Set OPENAI_API_KEY.", provider="openai")) == (
        3,
        "openai: No API key. Set OPENAI_API_KEY.",
    )
    assert classify(AuthError("denied", provider="openai", status=401))[0] == 1
    assert classify(RateLimitError("slow", provider="openai", status=429)) == (1, "slow (openai, 429)")
    assert classify(BudgetExceededError("cap", kind=BudgetKind.SPEND))[0] == 1
    assert classify(ExceptionGroup("g", [FileNotFoundError(2, "No such file", "x.flow")])) == (
        3,
        "x.flow: No such file",
    )
    assert classify(ValueError("boom")) == (1, "internal error: ValueError: boom")
    assert one_line("a\n  b\r\nc") == "a; b; c"
