"""The canonical writer (`onellm.yamlio._emit`) and the fast reader of its instance layout (`onellm.yamlio._fast`).

These are internals, tested directly because the fast reader must never disagree with a YAML parser: whatever it
accepts it must read exactly as the guarded loader does, and it must decline everything outside the canonical shape.
"""

from __future__ import annotations

import contextlib
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.yamlio import _emit, dump_block, dump_document, dump_scalar, load_document, safe_load
from onellm.yamlio._emit import (
    _TYPED_DIGITS,
    RESERVED,
    decimal_text,
    emit_block,
    emit_mapping,
    plain,
    plain_pattern,
    quote,
    scalar,
)
from onellm.yamlio._fast import NotCanonical, parse_block, parse_entries, parse_mapping

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
    "24-1234",
    "3rd",
    "12abc",
    "1e3x",
    "0x1G",
    "1.2.3",
    "1_000",
    "1:30",
    "2026-11-05 x",
    "1 2",
    "0o17",
    "1e",
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
    with contextlib.suppress(NotCanonical):
        assert parse_block(block, indent) == data
    mapping = emit_mapping(data)
    assert safe_load(mapping) == data
    with contextlib.suppress(NotCanonical):
        assert parse_mapping(mapping) == data


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([0, 2, 4]))
def test_strings_written_before_are_written_the_same_again(data: dict[Any, Any], indent: int) -> None:
    # The writer keeps the text of short strings it wrote on one line: whatever wrote them first (a mapping value, a
    # list item, `scalar`), the text is the one the rules give, and a string that is a literal block stays one.
    _emit.known_texts.clear()
    first = (emit_block(data, indent), emit_mapping(data), dump_block(data, indent))
    assert (emit_block(data, indent), emit_mapping(data), dump_block(data, indent)) == first
    _emit.known_texts.clear()
    for text in _strings(data):
        scalar(text)
        emit_block({"k": [text]})
    assert (emit_block(data, indent), emit_mapping(data), dump_block(data, indent)) == first
    for text in _strings(data):
        assert _emit.known_texts.get(text, text if plain(text) else quote(text)) == (
            text if plain(text) else quote(text)
        )


def test_a_cached_string_is_written_by_its_rule_wherever_it_stands() -> None:
    _emit.known_texts.clear()

    class Name(str):
        pass

    for text, one_line, in_mapping, in_block in [
        ("entry 0: ok", '"entry 0: ok"', 'k: "entry 0: ok"\n', '- k: "entry 0: ok"\n'),
        ("2026-11-05", '"2026-11-05"', 'k: "2026-11-05"\n', '- k: "2026-11-05"\n'),
        ("plain words", "plain words", "k: plain words\n", "- k: plain words\n"),
        # A literal block as a value, quoted by scalar (one line).
        ("a\nb", '"a\\nb"', "k: |-\n  a\n  b\n", "- k: |-\n    a\n    b\n"),
        # Cannot be a literal block: quoted everywhere.
        (" a\nb", '" a\\nb"', 'k: " a\\nb"\n', '- k: " a\\nb"\n'),
    ]:
        for _ in range(2):
            assert scalar(text) == one_line
            assert scalar(Name(text)) == one_line
            assert emit_mapping({"k": text}) == in_mapping
            assert emit_block({"k": Name(text)}) == in_block
            assert emit_block({"k": text}) == in_block
            if "\n" not in text:
                assert emit_block({"k": [text, Name(text)]}) == f"- k:\n  - {one_line}\n  - {one_line}\n"


def test_a_key_written_before_is_written_by_its_rule_again() -> None:
    _emit._quoted_keys.clear()
    for _ in range(2):
        assert emit_mapping({"n": 1, "yes": 2, "a b": 3, "plain": 4}) == '"n": 1\n"yes": 2\n"a b": 3\nplain: 4\n'
        assert emit_block({1: "a", None: "b", 1.5: "c"}) == "- 1: a\n  null: b\n  1.5: c\n"
        assert emit_block({True: "a", "1": "b"}) == '- true: a\n  "1": b\n'
        long = "k " * 600
        assert emit_block({long: 1}).startswith(f'- ? "{long}"\n  : 1')


@settings(max_examples=500, deadline=None)
@given(
    st.decimals(allow_nan=False, allow_infinity=False) | st.decimals(places=8, allow_nan=False, allow_infinity=False)
)
def test_a_decimal_is_written_in_positional_notation(value: Decimal) -> None:
    text = decimal_text(value)
    positional = format(value, "f")
    if len(positional) <= 100:
        assert text == positional
    else:
        assert "e" in text
    assert Decimal(text) == value


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
    with pytest.raises(NotCanonical):
        parse_block(block)


def test_deep_nesting_is_declined_not_recursed() -> None:
    data: Any = "leaf"
    for _ in range(200):
        data = {"k": data}
    with pytest.raises(NotCanonical):
        parse_block(emit_block({"deep": data}))


@settings(max_examples=500, deadline=None)
@given(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=12)
    | st.lists(st.sampled_from([*"aZ_/:# -\t.1é", "  ", ": ", " #", "yes", "Null"]), max_size=8).map("".join)
    | st.sampled_from(TRICKY)
)
def test_the_quick_plain_check_agrees_with_the_plain_pattern(text: str) -> None:
    expected = (
        plain_pattern().fullmatch(text) is not None
        and text.lower() not in RESERVED
        and _TYPED_DIGITS.fullmatch(text) is None
    )
    assert plain(text) == expected


# The typed-digits rule spelled out, one form per alternative.
_TYPED_DIGITS_SPELLED = re.compile(
    r"""[0-9][0-9_]*(?:\.[0-9._]*)?(?:[eE][-+]?[0-9]+)?
    |0[xob][0-9a-fA-F_]+
    |[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?""",
    re.X | re.S,
)


@settings(max_examples=2000, deadline=None)
@given(
    st.tuples(st.sampled_from("0123456789"), st.text("0123456789_.eE+-:xobXOBacdfT \t", max_size=14)).map("".join)
    | st.sampled_from(["1:30", "1:5", "12:60", "0x1F", "0b", "1e5", "1e", "1.2.3", "2026-01-02", "2026-1-2T3", "1_0:5"])
)
def test_the_typed_digits_rule_agrees_with_its_spelled_out_form(text: str) -> None:
    assert (_TYPED_DIGITS.fullmatch(text) is None) == (_TYPED_DIGITS_SPELLED.fullmatch(text) is None)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents, min_size=1, max_size=4), st.sampled_from([0, 2]))
def test_a_run_of_entries_reads_as_the_yaml_loader_reads_it(items: list[dict[Any, Any]], indent: int) -> None:
    text = "".join(emit_block(item, indent) for item in items)
    assert safe_load(text) == items
    with contextlib.suppress(NotCanonical):
        assert parse_entries(text, 0, indent) == items


def test_a_run_of_entries_is_read_from_where_it_starts() -> None:
    head = "name: x\nmessages:\n"
    body = emit_block({"id": "a", "note": "two\nlines\n"}) + emit_block({"id": "b", "n": 1})
    assert parse_entries(head + body, len(head)) == [{"id": "a", "note": "two\nlines\n"}, {"id": "b", "n": 1}]
    with pytest.raises(NotCanonical):
        parse_entries(head + body + "after: 1\n", len(head))
    with pytest.raises(NotCanonical):
        parse_entries(head + body.rstrip("\n"), len(head))


@pytest.mark.parametrize("value", [*TRICKY, "24-1234", "1.2.3", "C#", "a, b", "x{y}", Decimal("1E-7"), 1e-05])
def test_one_set_of_rules_for_every_file_onellm_writes(value: Any) -> None:
    """The instance layout and the layout of the files people edit differ only in where a list sits, never in how a
    value is written."""
    assert dump_block({"k": value}) == emit_mapping({"k": value})
    assert dump_block([value]) == emit_mapping({"k": [value]}).removeprefix("k:\n").replace("\n- ", "\n  - ", 0)
    if "\n" not in str(value):
        assert dump_scalar(value) == scalar(value)


def test_the_shape_of_the_csharp_writer() -> None:
    """What the C# writer writes plain (`testdata/formats/instances/valid/csharp-writer-shape.yaml`) is written plain,
    and reads back on the fast path."""
    data = {"caseNo": "24-1234", "path": "C:\\\\cases", "text": "Docket 24-1234: open.", "cost": Decimal("0.001806")}
    text = emit_mapping(data)
    assert text == 'caseNo: 24-1234\npath: C:\\\\cases\ntext: "Docket 24-1234: open."\ncost: 0.001806\n'
    assert parse_mapping(text) == data
    assert safe_load(text) == data


def test_names_with_dashes_and_dots_are_plain_keys() -> None:
    data = {"X-Api-Key": "k", "gpt-4.1": 1, "a/b": 2, "weird key": 3, "yes": 4, "24-1234": 5}
    text = emit_mapping(data)
    assert text == 'X-Api-Key: k\ngpt-4.1: 1\na/b: 2\n"weird key": 3\n"yes": 4\n"24-1234": 5\n'
    assert parse_mapping(text) == data
    assert safe_load(text) == data
    assert dump_document(data) == text


def test_a_lists_column_is_the_only_difference_between_the_layouts() -> None:
    data = {"a": [1, {"b": ["x", "z"]}], "c": [[1, 2]]}
    assert emit_mapping(data) == "a:\n- 1\n- b:\n  - x\n  - z\nc:\n-\n  - 1\n  - 2\n"
    assert dump_document(data) == "a:\n  - 1\n  - b:\n      - x\n      - z\nc:\n  -\n    - 1\n    - 2\n"
    assert safe_load(emit_mapping(data)) == safe_load(dump_document(data)) == data


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("length", [1024, 1025, 5000])
def test_an_implicit_key_longer_than_yaml_allows_is_refused_by_every_loader_alike(length: int, quoted: bool) -> None:
    """YAML limits an implicit key to 1,024 characters (quotes included). The fast reader declines a longer one, so
    the instance loader refuses it exactly where the general and the round-trip loaders do."""
    from onellm.errors import BadDefinitionError
    from onellm.instances import Instance

    key = '"' + "k" * (length - 2) + '"' if quoted else "k" * length
    texts = [
        f"instanceId: a\n{key}: 1\n",
        f"instanceId: a\nmessages:\n- id: m\n  {key}: 1\n",
        f"instanceId: a\nmessages:\n- id: m\n  user:\n  - text: hi\n- id: n\n  {key}: 1\n",
    ]
    for text in texts:
        if length <= 1024:
            assert Instance.loads(text) == Instance.from_data(safe_load(text))
            continue
        with pytest.raises(NotCanonical):
            parse_mapping(f"{key}: 1\n")
        places = set()
        for load in (safe_load, load_document, Instance.loads):
            with pytest.raises(BadDefinitionError) as caught:
                load(text, file="long.yaml")
            err = caught.value
            assert err.file == "long.yaml"
            assert "1024" in err.detail, err.detail
            places.add((err.line, err.column))
        assert len(places) == 1, places
