"""The type table of `docs/tool-schemas.md` is what the code writes, keyword order included (the page's examples run
with the other docs' examples)."""

import dataclasses
import enum
import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import pytest

from onellm.tools import json_schema_for

DOC = Path(__file__).resolve().parents[4] / "docs" / "tool-schemas.md"


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


NAMESPACE: dict[str, Any] = {
    "bool": bool,
    "int": int,
    "float": float,
    "Decimal": Decimal,
    "str": str,
    "Path": Path,
    "bytes": bytes,
    "datetime": datetime,
    "date": date,
    "time": time,
    "timedelta": timedelta,
    "UUID": UUID,
    "Color": Color,
    "Literal": Literal,
    "Any": Any,
    "Point": Point,
    "Mapping": Mapping,
    "Sequence": Sequence,
}


def table_rows() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("| Python type | Fragment |") :]
    section = section[: section.index("\n\n")]
    rows = []
    for line in section.splitlines()[2:]:
        cells = re.findall(r"`((?:[^`])+)`", line.replace("\\|", "|"))
        rows.append((cells[0], cells[-1]))
    return rows


ROWS = table_rows()


def test_the_table_has_every_row() -> None:
    assert len(ROWS) >= 24


@pytest.mark.parametrize(("python", "fragment"), ROWS, ids=[r[0] for r in ROWS])
def test_doc_table_row(python: str, fragment: str) -> None:
    tp = eval(python, NAMESPACE)
    assert json.dumps(json_schema_for(tp), separators=(",", ":")) == fragment
