"""Malformed and hostile definition files fail with a typed error at the right line and column."""

from __future__ import annotations

import os
import re
import sys
import threading
import tracemalloc
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm.definitions import Decider, Definition, FlowMetadata
from onellm.errors import BadDefinitionError

FORMATS = Path(__file__).resolve().parents[4] / "testdata" / "formats"
MALFORMED = sorted(p for p in (FORMATS / "malformed").rglob("*") if p.is_file())
HOSTILE = sorted(p for p in (FORMATS / "hostile").rglob("*") if p.is_file())
_EXPECT = re.compile(rb"# expect (\d+):(\d+) (.+)")


def _expectation(path: Path) -> tuple[int, int, str]:
    first = path.read_bytes().split(b"\n", 1)[0]
    match = _EXPECT.fullmatch(first.rstrip(b"\r"))
    assert match, f"{path.name} has no '# expect L:C text' first line"
    return int(match[1]), int(match[2]), match[3].decode()


def _load(path: Path) -> Any:
    if path.name == "flow.yaml":
        return FlowMetadata.load(path)
    if path.name.endswith(".decider.yaml"):
        return Decider.load(path)
    return Definition.load(path)


def _ids(paths: list[Path]) -> list[str]:
    return [p.name if p.parent.name in ("malformed", "hostile") else f"{p.parent.name}/{p.name}" for p in paths]


def test_enough_malformed_files() -> None:
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize("path", MALFORMED + HOSTILE, ids=_ids(MALFORMED + HOSTILE))
def test_fails_at_the_expected_position(path: Path) -> None:
    line, column, words = _expectation(path)
    with pytest.raises(BadDefinitionError) as info:
        _load(path)
    err = info.value
    assert err.file == str(path)
    assert (err.line, err.column) == (line, column), str(err)
    assert words.lower() in err.detail.lower(), str(err)


LENIENT_DROPS = ["hook-without-file.yaml", "missing-key-invalid.yaml", "hook-unknown-point.yaml"]


@pytest.mark.parametrize("name", LENIENT_DROPS)
def test_lenient_loading_warns_at_the_same_position(name: str) -> None:
    path = FORMATS / "malformed" / name
    line, column, words = _expectation(path)
    definition = Definition.load(path, strict=False)
    assert len(definition.warnings) == 1
    warning = definition.warnings[0]
    assert (warning.line, warning.column) == (line, column)
    assert words.lower() in warning.message.lower()
    # What a lenient load leaves out is still written back: saving never loses a key.
    assert definition.dumps() == path.read_text()
    definition.name = "renamed"
    again = Definition.loads(definition.dumps(), strict=False)
    assert again.to_data() == definition.to_data()


# Values the seeds accept in lenient loading: out of range, or a name this version does not know. Lenient loading
# keeps the value as written and warns; strict loading refuses (`test_fails_at_the_expected_position`).
LENIENT_KEEPS = {
    "max-tokens-zero.yaml": ("max_tokens", 0),
    "temperature-negative.yaml": ("temperature", Decimal("-0.5")),
    "invocation-mode-invalid.yaml": ("invocation_mode", "batch"),
    "context-strategy-unknown.yaml": ("context_strategy", "summarize"),
}


@pytest.mark.parametrize("name", sorted(LENIENT_KEEPS))
def test_lenient_loading_keeps_a_value_the_seeds_accept_and_warns_where_it_is(name: str) -> None:
    path = FORMATS / "malformed" / name
    line, column, words = _expectation(path)
    definition = Definition.load(path, strict=False)
    [warning] = definition.warnings
    assert (warning.file, warning.line, warning.column) == (str(path), line, column)
    assert words.lower() in warning.message.lower()
    attribute, expected = LENIENT_KEEPS[name]
    value = getattr(definition, attribute)
    if attribute == "context_strategy":
        value = value.type
    assert value == expected
    assert definition.dumps() == path.read_text()
    definition.name = "renamed"
    again = Definition.loads(definition.dumps(), strict=False)
    assert again.to_data() == definition.to_data()
    assert len(again.warnings) == 1


@pytest.mark.parametrize(
    "text",
    [
        "maxIterations: 0\n",
        "thinking: {budget: -1}\n",
        "contextStrategy: {type: compact, triggerPercent: 150}\n",
        "contextStrategy: {type: compact, triggerTokens: 0, keepLast: -2}\n",
        "contextStrategy: summarizeEverything\n",
    ],
)
def test_every_range_and_name_check_of_an_agent_is_lenient_on_request(text: str) -> None:
    with pytest.raises(BadDefinitionError):
        Definition.loads(text, file="a.yaml")
    lenient = Definition.loads(text, file="a.yaml", strict=False)
    assert lenient.warnings
    assert all(w.file == "a.yaml" and w.line == 1 for w in lenient.warnings)
    assert lenient.dumps() == text


def test_lenient_loading_still_refuses_a_value_of_the_wrong_type() -> None:
    with pytest.raises(BadDefinitionError, match="expected a whole number"):
        Definition.loads("maxTokens: lots\n", strict=False)
    with pytest.raises(BadDefinitionError, match="expected a string"):
        Definition.loads("invocationMode: [a]\n", strict=False)


def _deep_flow(depth: int) -> str:
    return "model: m\ninputs: " + "[" * depth + "]" * depth + "\n"


def _deep_block(depth: int) -> str:
    return "model: m\ninputs:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(depth)) + " " * (depth + 1) + "v\n"


GENERATED: list[tuple[str, str | bytes, tuple[int, int], str]] = [
    ("100,000-digit integer", "model: m\nmaxTokens: " + "9" * 100_000 + "\n", (2, 12), "number"),
    ("100,000-digit float", "model: m\ntemperature: 0." + "1" * 100_000 + "\n", (2, 14), "number"),
    ("flow nesting 100,000 deep", _deep_flow(100_000), (2, 108), "nested"),
    ("block nesting 1,000 deep", _deep_block(1_000), (102, 101), "nested"),
    # The round-trip loader costs about 0.1 ms and kilobytes per value: its work is bounded before it starts.
    ("12 MB of long one-line keys", "".join(f"k{i:07d}{'x' * 1000}: v\n" for i in range(12_000)), (1, 1), "at most"),
    (
        "25,000 small values",
        "model: m\ninputs:\n" + "".join(f"  k{i}: {i}\n" for i in range(25_000)),
        (10000, 10),
        "20,000",
    ),
    (
        "one long string, many aliases",
        "model: m\nbig: &big '" + "x" * 1_000_000 + "'\ninputs: [" + ", ".join(["*big"] * 1000) + "]\n",
        (3, 46),
        "alias",
    ),
    ("invalid UTF-8 at the start", b"\xfe\xffmodel: m\n", (1, 1), "UTF-8"),
]


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
@pytest.mark.parametrize(("label", "text", "where", "word"), GENERATED, ids=[g[0] for g in GENERATED])
@pytest.mark.parametrize("kind", [Definition, Decider])
def test_generated_hostile_input_fails_fast_and_positioned(
    label: str, text: str | bytes, where: tuple[int, int], word: str, kind: Any
) -> None:
    with pytest.raises(BadDefinitionError) as info:
        kind.loads(text, file="hostile.yaml")
    err = info.value
    assert (err.file, err.line, err.column) == ("hostile.yaml", *where), str(err)
    assert word.lower() in err.detail.lower()


@pytest.mark.slow
@pytest.mark.parametrize(("label", "text", "where", "word"), GENERATED, ids=[g[0] for g in GENERATED])
def test_generated_hostile_input_stays_small_in_memory(label: str, text: str | bytes, where: Any, word: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(BadDefinitionError):
            Definition.loads(text, file="hostile.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A few times the text, never the expansion the aliases or the nesting would make.
    assert peak < 16 * 1024 * 1024 + 12 * len(text)


def test_a_reference_may_name_registered_tools_alone() -> None:
    # the getting-started agent names tools the host registered, with no routine or swarm
    text = "model: claude-sonnet\nreferences:\n  - tools: [get_docket, task_complete]\n"
    definition = Definition.loads(text, file="clerk.yaml")
    assert [r.tools for r in definition.references] == [["get_docket", "task_complete"]]
    assert definition.dumps() == text


@pytest.mark.skipif(sys.platform == "win32", reason="named pipes as POSIX has them")
def test_a_definition_that_is_a_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    os.mkfifo(path)
    failures: list[BaseException] = []

    def load() -> None:
        try:
            Definition.load(path)
        except BaseException as exc:
            failures.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the reader blocked on the pipe"
    [failure] = failures
    assert isinstance(failure, BadDefinitionError)
    assert failure.file == str(path)
    assert "named pipe" in str(failure)


def test_a_definition_file_too_large_to_read_names_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("model: m\nsystemPrompt: " + "x" * 2_000_000 + "\n")
    with pytest.raises(BadDefinitionError) as caught:
        Definition.load(path)
    assert caught.value.file == str(path)
    assert "at most 2,000,000 characters" in str(caught.value)
