"""Usage, cost lines, costs and warnings: exact money, display rounding, lossless plain data."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest

import onellm
from onellm import BadDefinitionError
from onellm.messages import CallWarning, Cost, CostLine, Usage, format_money


def test_cost_line_amount_is_quantity_over_per_times_price_times_multiplier() -> None:
    line = CostLine.compute("inputTokens", 1234, 1_000_000, Decimal("2.50"), Decimal("0.5"))
    assert line.amount == Decimal("0.0015425")
    assert line.amount == Decimal(1234) / Decimal(1_000_000) * Decimal("2.50") * Decimal("0.5")


def test_cost_line_amount_is_exact_beyond_default_decimal_precision() -> None:
    # 30 significant digits: the default 28-digit context would round this product.
    line = CostLine.compute("outputTokens", 123_456_789_012_345, 1_000_000, Decimal("1.234567890123456789"))
    assert line.amount == Decimal("152415787.532387529353764595060205")
    assert len(line.amount.as_tuple().digits) > 28
    assert line.amount.scaleb(6) == Decimal(123_456_789_012_345) * Decimal("1.234567890123456789")


def test_cost_line_with_decimal_quantity_and_per_one() -> None:
    line = CostLine.compute("audioSeconds", Decimal("12.5"), 1, Decimal("0.0001"))
    assert line.amount == Decimal("0.00125")


def test_cost_line_per_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="per"):
        CostLine.compute("x", 1, 0, Decimal(1))
    with pytest.raises(BadDefinitionError) as info:
        CostLine.from_data({"counter": "x", "quantity": 1, "per": 0, "unitPrice": 1})
    assert info.value.path == "costLine.per"


def test_cost_total_is_the_exact_sum_and_is_never_rounded() -> None:
    lines = [CostLine.compute("inputTokens", 1, 1_000_000, Decimal("3")) for _ in range(3)]
    cost = Cost.of(lines)
    assert cost.total == Decimal("0.000009")
    tiny = Cost.of([CostLine.compute("inputTokens", 1, 1_000_000_000, Decimal("1"))])
    assert tiny.total == Decimal("1E-9")
    assert (cost + tiny).total == Decimal("0.000009001")


def test_amounts_and_totals_print_at_the_scale_of_their_price() -> None:
    """A line carries the places of the price of one unit (0.1 per million is 0.0000001 a token), so the seeds'
    figures print as they do there: `0.0000040` per line and `0.0000240` for the script's total."""
    first = Cost.of(
        [
            CostLine.compute("inputTokens", 40, 1_000_000, Decimal("0.1")),
            CostLine.compute("outputTokens", 10, 1_000_000, Decimal("0.5")),
        ]
    )
    second = Cost.of(
        [
            CostLine.compute("inputTokens", 70, 1_000_000, Decimal("0.1")),
            CostLine.compute("outputTokens", 16, 1_000_000, Decimal("0.5")),
        ]
    )
    assert [str(line.amount) for line in first.lines] == ["0.0000040", "0.0000050"]
    assert str(first.total) == "0.0000090"
    both = first + second
    assert str(both.total) == "0.0000240"
    assert f"{both.total}" == "0.0000240"
    assert "total=Decimal('0.0000240')" in repr(both)
    assert both.display() == "0.000024"  # display still rounds to six places
    # places of the quantity and the multiplier count too; a price per hour (per 3600) keeps the exact quotient
    assert str(CostLine.compute("audioSeconds", Decimal("12.5"), 1, Decimal("0.0001")).amount) == "0.00125"
    assert str(CostLine.compute("inputTokens", 3, 1_000_000, Decimal("2"), Decimal("0.5")).amount) == "0.0000030"
    assert str(CostLine.compute("inputTokens", 3, 1_000_000, Decimal("2"), Decimal("0.50")).amount) == "0.00000300"
    assert str(CostLine.compute("containerHours", 1800, 3600, Decimal("0.03")).amount) == "0.015"
    assert str(CostLine.compute("inputTokens", 14, 1_000_000, Decimal("3")).amount) == "0.000042"


def test_the_catalog_prices_at_the_scale_of_its_prices() -> None:
    model = onellm.Catalog.default().resolve("gpt-6-luna")
    cost = model.price(Usage(input_tokens=40, output_tokens=10))
    assert [str(line.amount) for line in cost.lines] == ["0.0000040", "0.0000050"]
    assert str(cost.total) == "0.0000090"


@pytest.mark.parametrize(
    ("amount", "places", "text"),
    [
        ("0.0000005", 6, "0.000001"),
        ("0.0000015", 6, "0.000002"),
        ("0.0000025", 6, "0.000003"),  # half away from zero, not half to even
        ("-0.0000005", 6, "-0.000001"),
        ("-0.0000004", 6, "0.000000"),  # no negative zero
        ("0.00000049999", 6, "0.000000"),
        ("1", 6, "1.000000"),
        ("2.5", 0, "3"),
        ("-2.5", 0, "-3"),
        ("12.345", 2, "12.35"),
        ("1E-12", 6, "0.000000"),
    ],
)
def test_display_rounds_half_away_from_zero(amount: str, places: int, text: str) -> None:
    assert Cost(total=Decimal(amount)).display(places) == text
    assert format_money(Decimal(amount), places) == text


def test_display_defaults_to_six_places() -> None:
    assert Cost(total=Decimal("0.1234565")).display() == "0.123457"
    assert CostLine.compute("x", 1, 1, Decimal("0.0000125")).display() == "0.000013"


def test_cost_line_round_trip_in_spec_order() -> None:
    data: dict[str, Any] = {
        "counter": "inputTokens",
        "quantity": 1200,
        "per": 1_000_000,
        "unitPrice": Decimal("3"),
        "multiplier": Decimal("0.5"),
        "amount": Decimal("0.0018"),
        "label": "input tokens",
        "source": "https://example.com/pricing",
        "asOf": "2026-05-01",
        "tier": {"name": "batch"},
    }
    line = CostLine.from_data(data)
    assert line.as_of == date(2026, 5, 1)
    assert line.extra == {"tier": {"name": "batch"}}
    assert line.to_data() == data
    assert list(line.to_data()) == list(data)
    assert CostLine.from_data(line.to_data()) == line


def test_cost_line_keeps_key_order_and_explicit_defaults_it_was_read_with() -> None:
    data = {
        "future": 1,
        "amount": Decimal("6"),
        "counter": "images",
        "quantity": 2,
        "unitPrice": Decimal("3"),
        "per": 1,
    }
    line = CostLine.from_data(data)
    out = line.to_data()
    assert list(out.items()) == list(data.items())
    assert line == CostLine(
        counter="images", quantity=2, unit_price=Decimal("3"), amount=Decimal("6"), extra={"future": 1}
    )


def test_cost_line_missing_amount_is_computed() -> None:
    line = CostLine.from_data({"counter": "x", "quantity": 4, "per": 8, "unitPrice": "1.5"})
    assert line.amount == Decimal("0.75")


def test_money_from_float_uses_shortest_text() -> None:
    line = CostLine.from_data({"counter": "x", "quantity": 1, "unitPrice": 0.1, "amount": 0.1})
    assert line.unit_price == Decimal("0.1")
    assert line.amount == Decimal("0.1")


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"quantity": 1, "unitPrice": 1}, "costLine.counter"),
        ({"counter": "x", "unitPrice": 1}, "costLine.quantity"),
        ({"counter": "x", "quantity": 1}, "costLine.unitPrice"),
        ({"counter": 3, "quantity": 1, "unitPrice": 1}, "costLine.counter"),
        ({"counter": "x", "quantity": "many", "unitPrice": 1}, "costLine.quantity"),
        ({"counter": "x", "quantity": 1, "unitPrice": [1]}, "costLine.unitPrice"),
        ({"counter": "x", "quantity": 1, "unitPrice": 1, "asOf": "May 1"}, "costLine.asOf"),
        ({"counter": "x", "quantity": 1, "unitPrice": "NaN"}, "costLine.unitPrice"),
    ],
)
def test_bad_cost_line_names_the_path(data: dict[str, Any], path: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        CostLine.from_data(data)
    assert info.value.path == path


def test_usage_round_trip_every_key() -> None:
    data: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "serviceTier": "priority",
        "inputTokens": 100,
        "outputTokens": 20,
        "cacheCreationInputTokens": 30,
        "cacheReadInputTokens": 40,
        "cost": Decimal("0.00123"),
        "counters": {"reasoningTokens": 12, "audioSeconds": Decimal("1.5")},
        "costLines": [
            {
                "counter": "inputTokens",
                "quantity": 100,
                "per": 1_000_000,
                "unitPrice": Decimal("3"),
                "multiplier": Decimal("1"),
                "amount": Decimal("0.0003"),
            }
        ],
        "region": "eu",
    }
    usage = Usage.from_data(data)
    assert usage.total_input_tokens == 170
    assert usage.counters == {"reasoningTokens": 12, "audioSeconds": Decimal("1.5")}
    assert usage.extra == {"region": "eu"}
    assert list(usage.to_data().items()) == list(data.items())
    assert Usage.from_data(usage.to_data()) == usage


def test_usage_written_from_code_omits_zero_cache_counters() -> None:
    assert Usage(input_tokens=3, output_tokens=4).to_data() == {"inputTokens": 3, "outputTokens": 4}


def test_usage_empty_list_and_zero_written_stay_written() -> None:
    data = {"inputTokens": 1, "outputTokens": 0, "cacheReadInputTokens": 0, "costLines": [], "note": None}
    assert Usage.from_data(data).to_data() == data


def test_usage_merge_later_non_zero_counter_wins() -> None:
    first = Usage(model="m", input_tokens=10, output_tokens=1, counters={"reasoningTokens": 5})
    later = Usage(output_tokens=42, counters={"reasoningTokens": 0, "images": 1})
    merged = first.merge(later)
    assert merged == Usage(model="m", input_tokens=10, output_tokens=42, counters={"reasoningTokens": 5, "images": 1})


def test_usage_bad_token_count_names_the_path() -> None:
    with pytest.raises(BadDefinitionError) as info:
        Usage.from_data({"inputTokens": "ten"})
    assert info.value.path == "usage.inputTokens"
    with pytest.raises(BadDefinitionError) as info:
        Usage.from_data({"costLines": [{"counter": "x"}]})
    assert info.value.path == "usage.costLines[0].quantity"


def test_warning_and_cost_round_trip() -> None:
    warning = CallWarning(kind="parameter_stripped", message="temperature removed", detail={"parameter": "temperature"})
    assert CallWarning.from_data(warning.to_data()) == warning
    cost = Cost.of([CostLine.compute("x", 2, 1, Decimal("0.5"))], warnings=[warning], priced=False)
    data = cost.to_data()
    assert data["total"] == Decimal("1.0")
    assert Cost.from_data(data) == cost


def test_public_names_resolve_lazily() -> None:
    assert onellm.Usage is Usage
    assert onellm.CostLine is CostLine
    assert onellm.Cost is Cost
