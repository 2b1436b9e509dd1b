"""The canonical writer and the fast reader of instance files (`onellm.instances._canon`).

These are internals, tested directly because the fast reader must never disagree with a YAML parser: whatever it
accepts it must read exactly as the guarded loader does, and it must decline everything outside the canonical shape.
"""

from __future__ import annotations

import contextlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.instances._canon import (
    _RESERVED,
    Unsupported,
    emit_block,
    emit_mapping,
    parse_block,
    parse_entries,
    parse_mapping,
    plain,
    plain_pattern,
    scalar,
)
from onellm.yamlio import load_document, safe_load

TRICKY = [
    "",
    " ",
    "true",
    "False",
    "yes",
    "n",
    "null",
    "~",
    "12",
    "-3",
    "1.5",
    "1e3",
    "0x1F",
    ".inf",
    "2026-11-05",
    "2026-11-05T09:30:00Z",
    "a: b",
    "a #b",
    "#x",
    "- a",
    "? q",
    "|",
    ">",
    "&a",
    "*a",
    "!tag",
    "%x",
    "@x",
    "`x",
    "'q'",
    '"q"',
    "key:",
    "trailing ",
    " leading",
    "two  spaces",
    "tab\there",
    "line\nbreak",
    "ends\n",
    "ends\n\n",
    "\nstarts",
    "  indented\nsecond",
    "a\n  \nb",
    "last\n  ",
    "cr\r\nlf",
    "nel\x85x",
    "ls\u2028x",
    "bom\ufeffx",
    "del\x7fx",
    "bell\x07",
    "é café",
    "emoji 🎉",
    "/path/to/file",
    "http://example.com/a?b=c#d",
    "<<",
    "=",
]

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40) | st.sampled_from(TRICKY)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-(10**9), max_value=10**9)
    | texts
)
keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True) | texts
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=25
)
documents = st.dictionaries(keys, values, min_size=1, max_size=6)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([0, 2, 4]))
def test_what_the_writer_writes_every_loader_reads_back_the_same(data: dict[Any, Any], indent: int) -> None:
    block = emit_block(data, indent)
    assert safe_load(block) == [data]
    assert load_document(block).plain == [data]
    with contextlib.suppress(Unsupported):
        assert parse_block(block, indent) == data
    mapping = emit_mapping(data)
    assert safe_load(mapping) == data
    with contextlib.suppress(Unsupported):
        assert parse_mapping(mapping) == data


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][A-Za-z]{0,8}", fullmatch=True),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-(10**12), 10**12)
            | st.text(st.characters(min_codepoint=32, max_codepoint=0x2000, exclude_characters="\x85"), max_size=30),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), inner, max_size=3)
            ),
            max_leaves=15,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_fast_reader_reads_everything_the_writer_writes_for_ordinary_data(data: dict[str, Any]) -> None:
    assert parse_block(emit_block(data)) == data
    assert parse_mapping(emit_mapping(data)) == data


def test_the_canonical_shape() -> None:
    data = {
        "id": "m1",
        "user": [{"text": "hello, world"}],
        "toolCalls": [{"id": "c1", "inputs": {"path": "/a b", "count": 3, "ok": True, "none": None}, "result": []}],
        "usage": {"cost": Decimal("0.000042"), "counters": {}},
        "note": "line one\nline two\n",
        "nested": [["a", "b"], []],
        "weird key": "2026-11-05T09:30:00Z",
    }
    assert emit_block(data) == (
        "- id: m1\n"
        "  user:\n"
        "  - text: hello, world\n"
        "  toolCalls:\n"
        "  - id: c1\n"
        "    inputs:\n"
        "      path: /a b\n"
        "      count: 3\n"
        "      ok: true\n"
        "      none: null\n"
        "    result: []\n"
        "  usage:\n"
        "    cost: 0.000042\n"
        "    counters: {}\n"
        "  note: |\n"
        "    line one\n"
        "    line two\n"
        "  nested:\n"
        "  -\n"
        "    - a\n"
        "    - b\n"
        "  - []\n"
        '  "weird key": "2026-11-05T09:30:00Z"\n'
    )
    assert parse_block(emit_block(data)) == data


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("plain words here", "plain words here"),
        ("true", '"true"'),
        ("No", '"No"'),
        ("12", '"12"'),
        ("2026-11-05", '"2026-11-05"'),
        ("a: b", '"a: b"'),
        ("x #y", '"x #y"'),
        ("", '""'),
        ("bell\x07", '"bell\\u0007"'),
        ("ls\u2028", '"ls\\u2028"'),
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("5"), "5"),
        (1.5e-07, "1.5e-07"),
        (1e-05, "1.0e-05"),
        (None, "null"),
        (False, "false"),
    ],
)
def test_scalars(value: Any, written: str) -> None:
    assert scalar(value) == written


def test_a_very_long_key_takes_the_explicit_form() -> None:
    key = "k" * 1500
    text = emit_mapping({key: 1, "after": [1]})
    assert text.startswith(f'? "{key}"\n: 1\n')
    assert safe_load(text) == {key: 1, "after": [1]}


@pytest.mark.parametrize(
    "block",
    [
        "- id: a  # comment\n",
        "- id: &x a\n  b: *x\n",
        "- {id: a}\n",
        "- id: a\n  user: [1, 2]\n",
        "- id: a\n  id: b\n",
        "- id: 'single'\n",
        "- id: a\n  text: >\n    folded\n",
        "- id: a\n  text: |+\n    kept\n",
        "- id: a\n  text: |2\n     indented\n",
        "- id: a\n  text: |\n      deeper than needed\n",
        "- id: a\n\tuser: x\n",
        "- id: yes\n",
        "- id: 0o17\n",
        "- id: 1e3\n",
        "- id: !tag a\n",
        "- id: a\n  user:\n",
        "- id: a\n   odd: indent\n",
        "- id: a\n- id: b\n",
        "- id: " + "9" * 40 + "\n",
        "- true: a\n",
        '- id: "bad \\q escape"\n',
        "- id: a\n  \n  b: c\n",
    ],
)
def test_the_fast_reader_declines_what_is_not_canonical(block: str) -> None:
    with pytest.raises(Unsupported):
        parse_block(block)


def test_deep_nesting_is_declined_not_recursed() -> None:
    data: Any = "leaf"
    for _ in range(200):
        data = {"k": data}
    with pytest.raises(Unsupported):
        parse_block(emit_block({"deep": data}))


@settings(max_examples=500, deadline=None)
@given(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=12)
    | st.lists(st.sampled_from([*"aZ_/:# -\t.1é", "  ", ": ", " #", "yes", "Null"]), max_size=8).map("".join)
    | st.sampled_from(TRICKY)
)
def test_the_quick_plain_check_agrees_with_the_plain_pattern(text: str) -> None:
    expected = plain_pattern().fullmatch(text) is not None and text.lower() not in _RESERVED
    assert plain(text) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents, min_size=1, max_size=4), st.sampled_from([0, 2]))
def test_a_run_of_entries_reads_as_the_yaml_loader_reads_it(items: list[dict[Any, Any]], indent: int) -> None:
    text = "".join(emit_block(item, indent) for item in items)
    assert safe_load(text) == items
    with contextlib.suppress(Unsupported):
        assert parse_entries(text, 0, indent) == items


def test_a_run_of_entries_is_read_from_where_it_starts() -> None:
    head = "name: x\nmessages:\n"
    body = emit_block({"id": "a", "note": "two\nlines\n"}) + emit_block({"id": "b", "n": 1})
    assert parse_entries(head + body, len(head)) == [{"id": "a", "note": "two\nlines\n"}, {"id": "b", "n": 1}]
    with pytest.raises(Unsupported):
        parse_entries(head + body + "after: 1\n", len(head))
    with pytest.raises(Unsupported):
        parse_entries(head + body.rstrip("\n"), len(head))
