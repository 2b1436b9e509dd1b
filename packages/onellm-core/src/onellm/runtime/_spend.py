"""Spend reservation: the runtime's three caps (whole runtime, one instance, one call) and the holds calls in flight
take on them.

A call reserves its worst case before it is sent (`reserve`, `reserve_embeddings`, `reserve_estimate`) and then
settles the reservation:
`commit(actual)` once the answer is priced, `release()` on every path that paid nothing (a provider error, a
cancellation before the answer). With no cap set nothing is estimated and `reserve` returns None.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from onellm.errors import BudgetKind

if TYPE_CHECKING:
    from onellm.catalog import ResolvedModel
    from onellm.catalog.spend import CostEstimate, Reservation, SpendCap, SpendGuard
    from onellm.instances import Instance
    from onellm.providers import ChatRequest

__all__ = ["SpendAccount", "money"]

_ZERO = Decimal(0)


def money(value: Decimal | int | str | None, name: str) -> Decimal | None:
    """A cap given as a `Decimal`, an int or a string; None stays None.

    Raises:
        TypeError: a float (money is never a binary float) or something that is not an amount.
        ValueError: a negative amount.
    """
    if value is None:
        return None
    if isinstance(value, float):
        raise TypeError(f"{name}: give money as a Decimal, an int or a string, not a float")
    try:
        amount = Decimal(value)
    except Exception as error:
        raise TypeError(f"{name}: {value!r} is not an amount of money") from error
    if amount < 0:
        raise ValueError(f"{name}: a cap cannot be negative")
    return amount


class SpendAccount:
    """The caps of one runtime and what calls through it have spent. Thread-safe.

    Args:
        spend_cap: Dollars the whole runtime may spend.
        instance_spend_cap: Dollars one instance may spend, its earlier turns counted.
        max_cost_per_call: The most one call may cost, judged by its worst case before it is sent.
    """

    def __init__(
        self,
        *,
        spend_cap: Decimal | int | str | None = None,
        instance_spend_cap: Decimal | int | str | None = None,
        max_cost_per_call: Decimal | int | str | None = None,
    ) -> None:
        self._spend_cap = money(spend_cap, "spend_cap")
        self._instance_spend_cap = money(instance_spend_cap, "instance_spend_cap")
        self._max_cost_per_call = money(max_cost_per_call, "max_cost_per_call")
        self._guard: SpendGuard | None = None
        self._instance_caps: dict[str, SpendCap] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------------------- caps
    @property
    def spend_cap(self) -> Decimal | None:
        return self._spend_cap

    @spend_cap.setter
    def spend_cap(self, value: Decimal | int | str | None) -> None:
        self._spend_cap = money(value, "spend_cap")
        self._guard = None

    @property
    def instance_spend_cap(self) -> Decimal | None:
        return self._instance_spend_cap

    @instance_spend_cap.setter
    def instance_spend_cap(self, value: Decimal | int | str | None) -> None:
        self._instance_spend_cap = money(value, "instance_spend_cap")
        self._instance_caps.clear()

    @property
    def max_cost_per_call(self) -> Decimal | None:
        return self._max_cost_per_call

    @max_cost_per_call.setter
    def max_cost_per_call(self, value: Decimal | int | str | None) -> None:
        self._max_cost_per_call = money(value, "max_cost_per_call")
        self._guard = None

    @property
    def spent(self) -> Decimal:
        """What calls have cost so far (counted while a cap is set)."""
        return self._guard.spent if self._guard is not None else _ZERO

    @property
    def capped(self) -> bool:
        """True when any cap is set (and calls are therefore estimated and held)."""
        return not (self._spend_cap is None and self._max_cost_per_call is None and self._instance_spend_cap is None)

    def _spend_guard(self) -> SpendGuard | None:
        if not self.capped:
            return None
        with self._lock:
            if self._guard is None:
                from onellm.catalog.spend import SpendGuard as _Guard

                self._guard = _Guard(max_cost_per_call=self._max_cost_per_call, spend_cap=self._spend_cap)
            return self._guard

    def _instance_cap(self, instance: Instance) -> SpendCap | None:
        if self._instance_spend_cap is None or instance.id is None:
            return None
        with self._lock:
            cap = self._instance_caps.get(instance.id)
            if cap is None:
                from onellm.catalog.spend import SpendCap as _Cap

                earlier = sum(
                    (m.usage.cost for m in instance.messages if m.usage is not None and m.usage.cost is not None),
                    _ZERO,
                )
                cap = _Cap(
                    self._instance_spend_cap, BudgetKind.INSTANCE_SPEND, spent=earlier, name="instance spend cap"
                )
                self._instance_caps[instance.id] = cap
            return cap

    # --------------------------------------------------------------------------------------------------- holds
    def reserve(self, model: ResolvedModel, request: ChatRequest, instance: Instance | None) -> Reservation | None:
        """Hold the worst case of a chat call on every cap that applies (None when no cap is set).

        Raises:
            BudgetExceededError: the call could pass a cap; nothing is held and nothing may be sent.
        """
        if self._spend_cap is None and self._max_cost_per_call is None and self._instance_spend_cap is None:
            return None  # `capped` read inline: every call of an uncapped runtime asks
        guard = self._spend_guard()
        if guard is None:
            return None
        from onellm.catalog.counting import TokenEstimator
        from onellm.catalog.spend import CostEstimator

        tokens = TokenEstimator(model).count(request.messages, system=request.system, tools=request.tools).tokens
        estimate = CostEstimator(model).estimate(
            tokens,
            max_output_tokens=request.max_output_tokens,
            service_tier=request.service_tier,
        )
        cap = self._instance_cap(instance) if instance is not None else None
        return guard.reserve(estimate, caps=(cap,) if cap is not None else ())

    def reserve_embeddings(self, model: ResolvedModel, inputs: Sequence[str]) -> Reservation | None:
        """Hold the worst case of an embeddings call (its inputs' estimated tokens; no output).

        Raises:
            BudgetExceededError: the call could pass a cap.
        """
        guard = self._spend_guard()
        if guard is None:
            return None
        from onellm.catalog.counting import TokenEstimator
        from onellm.catalog.spend import CostEstimator

        estimator = TokenEstimator(model)
        tokens = sum(estimator.text(item) for item in inputs)
        return guard.reserve(CostEstimator(model).estimate(tokens, max_output_tokens=0))

    def reserve_estimate(
        self, estimate: CostEstimate | Decimal | None, *, reason: str | None = None
    ) -> Reservation | None:
        """Hold a worst case worked out by the caller (a media call's); None is an unknown worst case, which a cap
        refuses with `reason` (None when no cap is set).

        Raises:
            BudgetExceededError: the call could pass a cap, or a cap is set and the worst case is unknown.
        """
        guard = self._spend_guard()
        if guard is None:
            return None
        return guard.reserve(estimate, reason=reason)

    def forget(self, instance: Instance) -> None:
        """Drop the instance's cap (it is built again from the instance's messages when next needed)."""
        if self._instance_caps and instance.id is not None:
            with self._lock:
                self._instance_caps.pop(instance.id, None)
