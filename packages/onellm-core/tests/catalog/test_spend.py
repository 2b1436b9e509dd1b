"""The worst-case cost estimate and the spend guard."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from onellm.catalog import Catalog, CostEstimator, SpendCap, SpendGuard
from onellm.errors import BudgetExceededError, BudgetKind

SHIPPED = Catalog.shipped()


def test_estimate_is_full_output_allowance_at_normal_rates() -> None:
    est = CostEstimator(SHIPPED.resolve("claude-sonnet")).estimate(1000, max_output_tokens=500)
    # 1000 * 2 / 1e6 + 500 * 10 / 1e6
    assert est.total == Decimal("0.007")


def test_estimate_uses_the_model_maximum_when_the_request_sets_none() -> None:
    est = CostEstimator(SHIPPED.resolve("gpt-6-luna")).estimate(1000)
    # 1000 * 0.1 / 1e6 + 128000 * 0.5 / 1e6
    assert est.total == Decimal("0.0641")
    assert est.output_tokens == 128000


def test_estimate_takes_the_dearer_of_input_and_cache_write() -> None:
    model = SHIPPED.resolve("claude-sonnet")
    plain = CostEstimator(model).estimate(1000, max_output_tokens=0)
    cached = CostEstimator(model).estimate(1000, max_output_tokens=0, may_write_cache=True)
    assert plain.total == Decimal("0.002")
    assert cached.total == Decimal("0.0025")  # cache writes at 2.5 per million


def test_estimate_switches_to_long_context_rates() -> None:
    est = CostEstimator(SHIPPED.resolve("claude-haiku")).estimate(200_000, max_output_tokens=1000)
    # 200000 * 0.5 / 1e6 + 1000 * 2.5 / 1e6
    assert est.total == Decimal("0.1025")


def test_estimate_unknown_when_price_or_output_limit_is_unknown() -> None:
    assert CostEstimator(SHIPPED.resolve("gpt-9")).estimate(10, max_output_tokens=10).total is None
    no_limit = Catalog.from_layers({"name": "p", "models": [{"name": "m", "pricing": {"inputPerMillion": 1}}]})
    est = CostEstimator(no_limit.resolve("p:m")).estimate(10)
    assert est.total is None
    assert "output limit" in (est.reason or "")


def test_local_models_estimate_zero() -> None:
    assert CostEstimator(SHIPPED.resolve("ollama:llama3")).estimate(10, max_output_tokens=10).total == 0


def test_per_call_limit() -> None:
    guard = SpendGuard(max_cost_per_call=Decimal("0.01"))
    guard.reserve(Decimal("0.01")).commit(Decimal("0.01"))
    with pytest.raises(BudgetExceededError) as info:
        guard.reserve(Decimal("0.0100001"))
    assert info.value.kind is BudgetKind.CALL_COST


def test_spend_cap_counts_reservations_in_flight() -> None:
    guard = SpendGuard(spend_cap=Decimal("1"))
    first = guard.reserve(Decimal("0.6"))
    with pytest.raises(BudgetExceededError) as info:
        guard.reserve(Decimal("0.5"))
    assert info.value.kind is BudgetKind.SPEND
    first.commit(Decimal("0.2"))
    second = guard.reserve(Decimal("0.5"))
    second.release()
    assert guard.spent == Decimal("0.2")
    assert guard.cap is not None
    assert guard.cap.reserved == 0


def test_instance_cap_is_checked_with_the_runtime_cap() -> None:
    guard = SpendGuard(spend_cap=Decimal("10"))
    instance = SpendCap(Decimal("1"), BudgetKind.INSTANCE_SPEND, name="instance i-1")
    guard.reserve(Decimal("0.8"), caps=[instance]).commit(None)  # unknown actual: the estimate is recorded
    assert instance.spent == Decimal("0.8")
    with pytest.raises(BudgetExceededError) as info:
        guard.reserve(Decimal("0.3"), caps=[instance])
    assert info.value.kind is BudgetKind.INSTANCE_SPEND
    assert guard.cap is not None
    assert guard.cap.reserved == 0  # nothing held when refused


def test_unknown_estimate_is_refused_when_a_limit_is_set() -> None:
    estimate = CostEstimator(SHIPPED.resolve("gpt-9")).estimate(10, max_output_tokens=10)
    with pytest.raises(BudgetExceededError, match="cannot be checked"):
        SpendGuard(spend_cap=Decimal("5")).reserve(estimate)
    with pytest.raises(BudgetExceededError, match="cannot be checked"):
        SpendGuard(max_cost_per_call=Decimal("5")).reserve(None)
    SpendGuard().reserve(estimate).commit(None)  # no limit: nothing to check


def test_reservation_as_context_manager_releases_on_error() -> None:
    guard = SpendGuard(spend_cap=Decimal("1"))
    with pytest.raises(RuntimeError), guard.reserve(Decimal("0.9")):
        raise RuntimeError("call failed")
    assert guard.cap is not None
    assert guard.cap.reserved == 0
    reservation = guard.reserve(Decimal("0.5"))
    reservation.commit(Decimal("0.5"))
    with pytest.raises(RuntimeError, match="already settled"):
        reservation.commit(Decimal("0.5"))


def test_concurrent_calls_cannot_pass_the_cap_together() -> None:
    guard = SpendGuard(spend_cap=Decimal("1"))
    admitted: list[int] = []
    refused: list[int] = []
    barrier = threading.Barrier(20)

    def call(i: int) -> None:
        barrier.wait()
        try:
            guard.reserve(Decimal("0.1"))
        except BudgetExceededError:
            refused.append(i)
        else:
            admitted.append(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 10
    assert len(refused) == 10


def test_a_per_that_does_not_divide_evenly_is_warned() -> None:
    from onellm.messages import Usage

    catalog = Catalog.from_layers(
        {
            "name": "p",
            "models": [{"name": "m", "pricing": {"items": [{"counter": "audioMinutes", "price": 1, "per": 3}]}}],
        }
    )
    cost = catalog.resolve("p:m").price(Usage(counters={"audioMinutes": 1}))
    assert [w.detail["reason"] for w in cost.warnings if w.detail] == ["inexact_amount"]
    exact = catalog.resolve("p:m").price(Usage(counters={"audioMinutes": 3}))
    assert exact.total == 1
    assert exact.warnings == ()


def test_price_at_takes_the_call_time_in_any_form() -> None:
    import datetime as dt

    from onellm.messages import Timestamp, Usage

    catalog = Catalog.from_layers(
        {
            "name": "p",
            "models": [
                {
                    "name": "m",
                    "pricing": {"inputPerMillion": 2},
                    "pricingPeriods": [{"until": "2026-06-01", "pricing": {"inputPerMillion": 3}}],
                }
            ],
        }
    )
    model = catalog.resolve("p:m")
    usage = Usage(input_tokens=1_000_000)
    assert model.price(usage, at=dt.date(2026, 5, 31)).total == 3
    assert model.price(usage, at="2026-05-31T23:00:00Z").total == 3
    # 2026-06-01 01:00 at UTC+5 is still 31 May in UTC
    east = dt.datetime(2026, 6, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert model.price(usage, at=east).total == 3
    assert model.price(usage, at=Timestamp("2026-06-01T00:00:00Z")).total == 2
    assert model.price(usage, at=dt.datetime(2026, 6, 1, 0, 0)).total == 2


def test_estimate_request_from_a_chat_request() -> None:
    from onellm.messages import Message, TextPart
    from onellm.providers import ChatRequest
    from onellm.providers._request import CacheOptions

    model = SHIPPED.resolve("claude-sonnet")
    request = ChatRequest(
        model="claude-sonnet",
        messages=[Message(user=[TextPart(text="a" * 35)])],
        system="b" * 7,
        max_output_tokens=100,
        cache=CacheOptions(),
    )
    est = CostEstimator(model).estimate_request(request)
    # input: reply 3 + system (4 + 2) + user (4 + 10) = 23 tokens at the cache-write price 2.5; output 100 at 10
    assert est.input_tokens == 23
    assert est.total == Decimal("0.0010575")  # 23 * 2.5 / 1e6 + 100 * 10 / 1e6


@pytest.mark.parametrize("model", ["gpt-5-nano", "gemini-3.5-flash-lite", "gemini-3-pro"])
def test_the_models_the_seeds_run_are_priced_so_a_spend_cap_lets_them_through(model: str) -> None:
    import anyio

    from onellm import Runtime
    from onellm.instances import MemoryInstanceStore
    from onellm.testing import ScriptedProvider, ScriptStep

    resolved = SHIPPED.resolve(model)
    assert resolved.name == model  # listed, not matched by a pattern
    assert CostEstimator(resolved).estimate(1000).total is not None
    scripted = ScriptedProvider(resolved.provider).enqueue(ScriptStep.text_with_usage("ok", 10, 2))
    runtime = Runtime(store=MemoryInstanceStore(), spend_cap=Decimal("5"), environ={})
    runtime.providers.set(resolved.provider, scripted)
    result = anyio.run(lambda: runtime.generate(model, "hi"))
    assert result.text == "ok"
    assert result.cost.priced
    assert result.cost.total > 0


def test_a_model_without_a_price_is_still_refused_under_a_spend_cap() -> None:
    import anyio

    from onellm import Runtime
    from onellm.instances import MemoryInstanceStore
    from onellm.testing import ScriptedProvider

    runtime = Runtime(store=MemoryInstanceStore(), spend_cap=Decimal("5"), environ={})
    runtime.providers.set("openai", ScriptedProvider("openai"))
    with pytest.raises(BudgetExceededError, match="cannot be checked"):
        anyio.run(lambda: runtime.generate("gpt-9", "hi"))
