"""The YAML layer: byte-for-byte round trips, the guards against hostile input, and the canonical emitter."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.errors import BadDefinitionError
from onellm.yamlio import (
    MAX_DEPTH,
    dump_block,
    dump_document,
    dump_scalar,
    load_document,
    safe_load,
)

ODD_BUT_VALID = [
    "# only a comment\nname: a\n",
    "name: a\r\nmodel: b # trailing comment\r\n",
    "\ufeffname: with a byte order mark\n",
    "flow: {a: 1, b: [x, 'y', \"z\"]}\n",
    "'quoted key': 1\n\"double\": 2\n",
    "text: |\n  line one\n\n  line three\nfolded: >-\n  folded\n  text\n",
    "keep: |+\n  kept\n\n\nnext: 1\n",
    "list:\n- a\n-   b\n- - nested\n",
    "anchors:\n  base: &b {x: 1}\n  copy: *b\n",
    "empty:\nnothing: ~\n",
    "---\nexplicit: start\n...\n",
    "%YAML 1.2\n---\nversion: directive\n",
    "num: 0.10\nexp: 1.5e3\nhex: 0x1F\nneg: -7\n",
    "noTrailingNewline: true",
    "    indented: 4\n    other: 5\n",
    "tabs: 'in\ta value'\n",
]


@pytest.mark.parametrize("text", ODD_BUT_VALID)
def test_unchanged_document_dumps_byte_for_byte(text: str) -> None:
    doc = load_document(text, file="odd.yaml")
    assert doc.dumps() == text
    assert not doc.changed()


@pytest.mark.parametrize("text", ODD_BUT_VALID)
def test_both_loaders_read_the_same_values(text: str) -> None:
    assert load_document(text).plain == safe_load(text)


@pytest.mark.parametrize("text", ODD_BUT_VALID)
def test_changed_document_keeps_every_other_value(text: str) -> None:
    doc = load_document(text)
    plain = doc.plain
    if not isinstance(plain, dict):
        pytest.skip("not a mapping")
    plain["addedKey"] = "added value"
    doc.update(plain)
    out = doc.dumps()
    assert out != text
    assert safe_load(out) == plain


def test_changed_document_keeps_comments_and_crlf() -> None:
    text = "# heading\r\nname: clerk  # the name\r\nmodel: a\r\nextra:\r\n  keep: [1, 2]\r\n"
    doc = load_document(text)
    plain = doc.plain
    plain["model"] = "b"
    doc.update(plain)
    out = doc.dumps()
    assert out == "# heading\r\nname: clerk  # the name\r\nmodel: b\r\nextra:\r\n  keep: [1, 2]\r\n"


def test_null_kept_when_absent_from_new_data() -> None:
    doc = load_document("a: 1\nb:\nc: 3\n")
    doc.update({"a": 2, "c": 3})
    assert doc.dumps() == "a: 2\nb:\nc: 3\n"


def test_positions_are_one_based() -> None:
    doc = load_document("a:\n  b:\n    - x\n    - y: 1\n", file="p.yaml")
    assert doc.position("a.b[1].y") == (4, 10)
    assert doc.position("a.b[1].y", key=True) == (4, 7)
    assert doc.position(["a", "b", 0]) == (3, 7)
    # a path that leaves the document stops at the deepest node that exists
    assert doc.position("a.missing") == (2, 3)
    err = doc.error("wrong", "a.b[0]")
    assert (err.file, err.line, err.column, err.path) == ("p.yaml", 3, 7, "a.b[0]")


def test_timestamps_stay_strings_and_numbers_are_exact() -> None:
    text = "t: 2026-01-02T03:04:05.1234567Z\nd: 2026-01-02\nf: 0.1\nbig: 1e400\n"
    for data in (safe_load(text), load_document(text).plain):
        assert data == {
            "t": "2026-01-02T03:04:05.1234567Z",
            "d": "2026-01-02",
            "f": Decimal("0.1"),
            "big": Decimal("1e400"),
        }


def _alias_bomb(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        refs = ", ".join([f"*l{i - 1}"] * 9)
        lines.append(f"l{i}: &l{i} [{refs}]")
    return "\n".join(lines) + "\n"


HOSTILE: list[tuple[str, str | bytes, tuple[int, int], str]] = [
    ("alias bomb", _alias_bomb(9), (6, 10), "alias"),
    ("deep flow nesting", "a: " + "[" * 100_000 + "]" * 100_000 + "\n", (1, 4 + MAX_DEPTH - 1), "nested"),
    (
        "deep block nesting",
        "".join(" " * i + "k:\n" for i in range(200)) + " " * 200 + "v\n",
        (MAX_DEPTH + 1, MAX_DEPTH + 1),
        "nested",
    ),
    ("duplicate key", "name: a\nmodel: b\nname: c\n", (3, 1), "duplicate"),
    ("python object tag", "a: !!python/object/apply:os.system ['rm -rf /']\n", (1, 4), "tag"),
    ("python name tag", "a: !!python/name:os.system\n", (1, 4), "tag"),
    ("unknown local tag", "a:\n  b: !secret x\n", (2, 6), "tag"),
    ("tagged mapping", "a: !custom {x: 1}\n", (1, 4), "tag"),
    ("binary tag", "a: !!binary aGk=\n", (1, 4), "tag"),
    ("invalid UTF-8", b"name: ok\nmodel: \xc3\x28\n", (2, 8), "UTF-8"),
    ("huge integer", "n: " + "7" * 100_000 + "\n", (1, 4), "number"),
    ("huge float", "n: 1." + "5" * 100_000 + "\n", (1, 4), "number"),
    ("recursive alias", "a: &a\n  b: *a\n", (2, 6), "alias"),
    ("undefined alias", "a: *nowhere\n", (1, 4), "alias"),
    ("two documents", "a: 1\n---\nb: 2\n", (2, 1), "document"),
    ("NUL byte", "a: b\x00\n", (1, 5), "not allowed"),
    ("mapping as key", "? {a: 1}\n: v\n", (1, 3), "key"),
    ("bad explicit int", "a: !!int twelve\n", (1, 4), "integer"),
]


@pytest.mark.timeout(60)  # a hang guard: these inputs must never make the code run away
@pytest.mark.parametrize(("label", "text", "where", "word"), HOSTILE, ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("loader", ["safe", "round-trip"])
def test_hostile_input_fails_typed_and_positioned(
    label: str, text: str | bytes, where: tuple[int, int], word: str, loader: str
) -> None:
    load: Any = safe_load if loader == "safe" else load_document
    with pytest.raises(BadDefinitionError) as info:
        load(text, file="hostile.yaml")
    err = info.value
    assert err.file == "hostile.yaml"
    assert (err.line, err.column) == where, str(err)
    assert word.lower() in err.detail.lower()


def test_keys_that_are_not_strings_are_kept() -> None:
    assert safe_load("2: two\ntrue: yes\n~: nothing\n") == {2: "two", True: "yes", None: "nothing"}


def test_merge_keys_follow_explicit_keys() -> None:
    text = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n"
    assert safe_load(text)["use"] == {"x": 1, "y": 3}
    assert load_document(text).plain["use"] == {"x": 1, "y": 3}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (12, "12"),
        (Decimal("0.00123"), "0.00123"),
        (Decimal("Infinity"), ".inf"),
        (Decimal("1E-7"), "0.0000001"),
        ("plain text", "plain text"),
        ("yes", '"yes"'),
        ("2026-01-02T03:04:05Z", '"2026-01-02T03:04:05Z"'),
        ("12", '"12"'),
        ("1.2.3", '"1.2.3"'),
        ("1:30", '"1:30"'),
        ("24-1234", "24-1234"),
        ("3rd place", "3rd place"),
        ("C#", "C#"),
        ("it's: here", '"it\'s: here"'),
        ("line\nbreak", '"line\\nbreak"'),
        ("bell\x07", '"bell\\u0007"'),
        ("", '""'),
        ("https://example.com/a?b=1", "https://example.com/a?b=1"),
    ],
)
def test_dump_scalar(value: Any, text: str) -> None:
    assert dump_scalar(value) == text


def test_dump_block_indents_every_line() -> None:
    out = dump_block({"a": [1, {"b": "x\ny\n"}], "c": {}}, 4)
    assert out == "    a:\n      - 1\n      - b: |\n          x\n          y\n    c: {}\n"


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.decimals(min_value=-(10**20), max_value=10**20, places=8)
    | st.sampled_from([Decimal("Infinity"), Decimal("-Infinity"), Decimal("1E+400"), Decimal("0E-12")])
    | st.text(max_size=40)
)
_keys = st.text(max_size=12) | st.integers(min_value=-5, max_value=5)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _values, max_size=6))
def test_canonical_emitter_reads_back_the_same(data: dict[Any, Any]) -> None:
    text = dump_document(data) if data else "{}\n"
    assert safe_load(text) == data
    assert load_document(text).plain == data


_yamlish = st.text(alphabet=st.sampled_from(list("ab1:-?[]{},&*!|>'\"#%@`\n\t .\\<=~\x00\ufeffé")), max_size=80)


def _failure(load: Any, text: str | bytes) -> BadDefinitionError | None:
    try:
        load(text, file="fuzz.yaml")
    except BadDefinitionError as err:
        return err
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_yamlish)
def test_any_text_either_loads_or_fails_typed(text: str) -> None:
    for load in (safe_load, load_document):
        err = _failure(load, text)
        if err is not None:
            assert err.file == "fuzz.yaml"
            assert err.line is not None
            assert err.column is not None


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60))
def test_any_bytes_either_load_or_fail_typed(data: bytes) -> None:
    err = _failure(safe_load, data)
    assert err is None or err.line is not None


@pytest.mark.parametrize(("text", "value"), [("<<", "<<"), ("- <<\n", ["<<"]), ("a: <<\n", {"a": "<<"}), ("!", None)])
def test_merge_and_bare_tag_as_values(text: str, value: Any) -> None:
    assert safe_load(text) == value
    assert load_document(text).plain == value


@pytest.mark.parametrize(
    ("tail", "where", "word"),
    [
        ("y: !!python/object:os.system a\n", (2, 4), "tag"),
        ("y: " + "[" * 300 + "]" * 300 + "\n", (2, 103), "nested"),
        ("y: &a [*a]\n", (2, 8), "alias"),
        ("y: 1\ny: 2\n", (3, 1), "duplicate"),
    ],
)
def test_round_trip_guard_holds_where_libyaml_cannot_parse(tail: str, where: tuple[int, int], word: str) -> None:
    # libyaml refuses a timestamp inside a flow sequence that ruamel's parser accepts, so the pre-check on libyaml's
    # events stops early; the guard inside the round-trip parser must still catch what follows.
    with pytest.raises(BadDefinitionError) as info:
        load_document("x: [2024-01-01T00:00:00Z]\n" + tail, file="f.yaml")
    assert (info.value.line, info.value.column) == where
    assert word in info.value.detail


def test_safe_load_all_reads_every_document_with_the_same_guards() -> None:
    from onellm.yamlio import safe_load_all

    assert safe_load_all("a: 1\n---\nb: 2.5\n---\n") == [{"a": 1}, {"b": Decimal("2.5")}, None]
    assert safe_load_all("") == []
    assert safe_load_all("x: &a [1]\n---\ny: &a [2]\nz: *a\n") == [{"x": [1]}, {"y": [2], "z": [2]}]
    with pytest.raises(BadDefinitionError) as info:
        safe_load_all("a: 1\n---\nb: *a\n", file="two.yaml")
    assert (info.value.line, info.value.column) == (3, 4)
    with pytest.raises(BadDefinitionError) as info:
        safe_load_all("a: 1\n---\nb: " + "[" * 1000 + "]" * 1000 + "\n", file="two.yaml")
    assert info.value.line == 3
