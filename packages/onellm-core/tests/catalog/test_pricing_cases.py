"""The table-driven pricing cases of `testdata/pricing/`: every case's lines, total, warnings and `priced` flag.

Each file holds a catalog (a `provider` entry, priced as a code layer on its own, or `catalog: shipped`) and cases whose
expected lines were worked out by hand in the file. Lines are `[counter, quantity, per, unitPrice, multiplier, amount]`.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm.catalog import Catalog, CatalogLayer
from onellm.catalog._yaml import load_documents
from onellm.messages import Usage

CASES_DIR = Path(__file__).resolve().parents[4] / "testdata" / "pricing"


def _load() -> list[tuple[str, Catalog, dict[str, Any]]]:
    out: list[tuple[str, Catalog, dict[str, Any]]] = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        (doc,) = load_documents(path.read_text(encoding="utf-8"), file=str(path))
        if doc.get("catalog") == "shipped":
            catalog = Catalog.shipped()
        else:
            catalog = Catalog([CatalogLayer.from_data(doc["provider"], name="code", file=str(path))])
        out.extend((f"{path.stem}:{case['id']}", catalog, case) for case in doc["cases"])
    return out


CASES = _load()


def _dec(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _usage(data: dict[str, Any]) -> Usage:
    data = dict(data)
    if "cost" in data:
        data["cost"] = str(data["cost"])
    return Usage.from_data(data)


def test_there_are_at_least_two_hundred_cases() -> None:
    assert len(CASES) >= 200
    assert len({case_id for case_id, _, _ in CASES}) == len(CASES), "case ids must be unique"


@pytest.mark.parametrize(("case_id", "catalog", "case"), CASES, ids=[c[0] for c in CASES])
def test_pricing_case(case_id: str, catalog: Catalog, case: dict[str, Any]) -> None:
    model = catalog.resolve(case["model"])
    options = dict(case.get("options") or {})
    kwargs: dict[str, Any] = {
        "service_tier": options.get("serviceTier"),
        "batch": bool(options.get("batch", False)),
        "region": options.get("region"),
        "multipliers": tuple(options.get("multipliers") or ()),
        "qualifiers": options.get("qualifiers"),
        "today": dt.date.fromisoformat(options["today"]) if "today" in options else None,
        "at": dt.date.fromisoformat(options["at"]) if "at" in options else None,
        "base_url": options.get("baseUrl"),
    }
    cost = model.price(_usage(case.get("usage") or {}), **kwargs)
    got = [
        (line.counter, _dec(line.quantity), _dec(line.per), line.unit_price, line.multiplier, line.amount)
        for line in cost.lines
    ]
    want = [(c, _dec(q), _dec(p), _dec(u), _dec(m), _dec(a)) for c, q, p, u, m, a in case.get("lines") or []]
    assert got == want, f"{case_id}: lines"
    assert cost.total == _dec(case["total"]), f"{case_id}: total"
    assert cost.priced is case.get("priced", True), f"{case_id}: priced"
    reasons = [w.detail.get("reason") if w.detail else w.kind for w in cost.warnings]
    assert reasons == list(case.get("warnings") or []), f"{case_id}: warnings"
    assert all(w.kind == "pricing" for w in cost.warnings)
    if "display" in case:
        assert cost.display() == case["display"]
    for line in cost.lines:
        # every line carries the price's provenance when the catalog gives it
        if "asOf" in case:
            assert line.as_of == dt.date.fromisoformat(case["asOf"])
