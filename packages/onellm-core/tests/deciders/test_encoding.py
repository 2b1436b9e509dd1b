"""The request encoding is Go's `encoding/json`, byte for byte: every case in `testdata/deciders/encoding/` holds
the text real Go (1.27.3) wrote for its input (SOURCE.md there says how it was made).

The encoder is private (`onellm._go.jsonenc`); it is tested on its own because its hundreds of cases would otherwise
each need a decider run, and the wire tests check the same bytes through the public API."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm._go.jsonenc import GoJsonError, encode, encode_text, go_number

CASES_FILE = Path(__file__).resolve().parents[4] / "testdata" / "deciders" / "encoding" / "go-encoding-cases.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_the_cases_are_many_and_varied() -> None:
    assert len(CASES) > 600
    assert any("\\u003c" in c["go"] for c in CASES)
    assert any("e-" in c["go"] for c in CASES)
    assert any("e+" in c["go"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_encoding_matches_go(case: dict[str, Any]) -> None:
    # Read as Go reads JSON into `any`: every number a 64-bit float (here: a Decimal, converted on the way out),
    # so `-0` keeps its sign, which a Python int cannot.
    value = json.loads(case["input"], parse_float=Decimal, parse_int=Decimal)
    assert encode_text(value) == case["go"]
    if case["id"] != "number -0":
        assert encode_text(json.loads(case["input"])) == case["go"]  # Python's own ints and floats
    assert encode(value) == case["go"].encode("utf-8")


def test_go_number_forms() -> None:
    assert [go_number(x) for x in (0.0, -0.0, 1.0, 1e20, 1e21, 1e-6, 1e-7, 1.5e-5, 123.456, 2.0**60)] == [
        "0",
        "-0",
        "1",
        "100000000000000000000",
        "1e+21",
        "0.000001",
        "1e-7",
        "0.000015",
        "123.456",
        "1152921504606847000",
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, Decimal("NaN"), Decimal("Infinity")])
def test_values_go_refuses_are_refused_with_their_path(bad: Any) -> None:
    with pytest.raises(GoJsonError) as caught:
        encode({"a": [1, {"b": bad}]})
    assert caught.value.path == "a[1].b"


def test_keys_and_other_values_as_go_writes_them() -> None:
    class Colour(enum.Enum):
        RED = "red"

    value = {
        True: 1,
        2: "two",
        "t": (1, 2),
        "bytes": b"\x00\xff",
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "day": dt.date(2026, 1, 2),
        "colour": Colour.RED,
        "big": 2**80,
    }
    assert encode_text(value) == (
        '{"2":"two","big":1.2089258196146292e+24,"bytes":"AP8=","colour":"red","day":"2026-01-02",'
        '"t":[1,2],"true":1,"when":"2026-01-02T03:04:05Z"}'
    )


def test_unwritable_values_are_refused() -> None:
    with pytest.raises(GoJsonError, match=r"x: a object cannot be written"):
        encode({"x": object()})
    with pytest.raises(GoJsonError, match="time zone"):
        encode({"x": dt.datetime(2026, 1, 2)})
    with pytest.raises(GoJsonError, match="object key must be text"):
        encode({(1, 2): 3})
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(GoJsonError, match="nests deeper"):
        encode(deep)


def test_a_lone_surrogate_is_written_as_the_replacement_character() -> None:
    assert encode_text({"s": "a\ud800b"}) == '{"s":"a\\ufffdb"}'


def test_a_string_that_looks_like_the_internal_marker_is_left_alone() -> None:
    assert encode_text(["\x00abc:0\x00", 1e-7]) == '["\\u0000abc:0\\u0000",1e-7]'
