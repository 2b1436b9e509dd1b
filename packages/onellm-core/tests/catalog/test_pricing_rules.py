"""Pricing rules beyond the table: non-terminating ratios, line provenance, labels and the reported-cost line."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from onellm.catalog import Catalog
from onellm.messages import Usage

CATALOG = Catalog.from_layers(
    {
        "name": "p",
        "models": [
            {
                "name": "thirds",
                "pricing": {
                    "inputPerMillion": 3,
                    "cacheReadPerMillion": "0.3",
                    "longContextInputPerMillion": 4,
                    "asOf": "2026-11-01",
                    "source": "https://p.example/prices",
                },
            },
            {
                "name": "labelled",
                "pricing": {
                    "inputPerMillion": 1,
                    "items": [
                        {
                            "counter": "images",
                            "price": 2,
                            "label": "generated images",
                            "asOf": "2026-10-01",
                            "source": "https://p.example/images",
                        }
                    ],
                    "asOf": "2026-11-01",
                    "source": "https://p.example/prices",
                },
            },
        ],
    }
)


def test_a_non_terminating_cache_ratio_is_warned() -> None:
    cost = CATALOG.resolve("p:thirds").price(Usage(cache_read_input_tokens=300_000))
    assert [w.detail["reason"] for w in cost.warnings if w.detail] == ["inexact_scale"]
    (line,) = cost.lines
    # 0.3 * 4/3 = 0.4, cut after 60 significant digits of the ratio
    assert abs(line.unit_price - Decimal("0.4")) < Decimal("1e-58")
    assert line.label == "long context"


def test_lines_carry_label_source_and_date() -> None:
    cost = CATALOG.resolve("p:labelled").price(Usage(input_tokens=10, counters={"images": 1}))
    text, images = cost.lines
    assert (text.label, text.source, text.as_of) == ("input tokens", "https://p.example/prices", dt.date(2026, 11, 1))
    assert (images.label, images.source, images.as_of) == (
        "generated images",
        "https://p.example/images",
        dt.date(2026, 10, 1),
    )


def test_reported_cost_line() -> None:
    unpriced = Catalog.from_layers({"name": "q", "models": [{"name": "m"}]}).resolve("q:m")
    cost = unpriced.price(Usage(input_tokens=5, cost=Decimal("0.0042")))
    assert cost.priced is True
    assert cost.total == Decimal("0.0042")
    assert cost.lines[0].counter == "cost"
    assert cost.lines[0].label == "cost reported by the provider"


def test_fast_and_full_paths_agree() -> None:
    model = CATALOG.resolve("p:labelled")
    usage = Usage(input_tokens=123_457)
    fast = model.price(usage)
    full = model.price(usage, service_tier="standard")  # takes the general path, same figures
    assert fast.lines == full.lines
    assert fast.total == full.total == Decimal("0.123457")


def test_a_call_below_every_tier_prices_as_the_full_path_does() -> None:
    tiered = Catalog.from_layers(
        {
            "name": "t",
            "models": [
                {
                    "name": "m",
                    "pricing": {
                        "inputPerMillion": "0.50",
                        "outputPerMillion": "1E+1",
                        "cacheReadPerMillion": "0.05",
                        "longContextInputPerMillion": 1,
                        "longContextThreshold": 1000,
                        "tiers": [{"above": 500, "basis": "outputTokens", "multipliers": {"*": 2}}],
                    },
                }
            ],
        }
    ).resolve("t:m")
    for usage in (
        Usage(input_tokens=340, output_tokens=20, cache_read_input_tokens=660),  # 1,000 input tokens: not above
        Usage(input_tokens=3, output_tokens=500),
        Usage(input_tokens=1001, output_tokens=20),  # long context
        Usage(input_tokens=3, output_tokens=501),  # the tier
    ):
        short = tiered.price(usage)
        full = tiered.price(usage, service_tier="standard")  # the general path, always
        assert [(str(line.amount), line.multiplier, line.label) for line in short.lines] == [
            (str(line.amount), line.multiplier, line.label) for line in full.lines
        ]
        assert str(short.total) == str(full.total)
    below = tiered.price(Usage(input_tokens=340, output_tokens=20))
    assert [str(line.amount) for line in below.lines] == ["0.00017000", "0.000200"]
    above = tiered.price(Usage(input_tokens=3, output_tokens=501))
    assert above.lines[1].multiplier == 2


def test_cost_round_trips_through_plain_data() -> None:
    from onellm.messages import Cost

    cost = Catalog.shipped().resolve("gpt-6-luna").price(Usage(input_tokens=13, output_tokens=7))
    again = Cost.from_data(cost.to_data())
    assert again.lines == cost.lines
    assert again.total == cost.total
