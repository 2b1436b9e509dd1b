"""The worst-case cost of a call before it is sent, and the guard that holds spend caps against it.

`CostEstimator` prices the worst case: every input token at the dearer of the input and cache-write prices (when the
request may write the cache), plus the full output allowance (the request's limit, else the model's maximum), through
the same pricing engine as real usage, so long-context rates, tiers and multipliers apply. `SpendGuard` checks a
per-call limit and spend caps against that estimate, keeps reservations for calls in flight so concurrent calls cannot
pass a cap together, and refuses a limit it cannot check because the price or the output limit is unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish
from onellm.errors import BudgetExceededError, BudgetKind

if TYPE_CHECKING:
    from onellm.catalog._catalog import ResolvedModel
    from onellm.catalog.counting import LocalTokenizer
    from onellm.messages import Cost

__all__ = ["CostEstimate", "CostEstimator", "Reservation", "SpendCap", "SpendGuard"]

_ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The worst case of one call. `total` is None when it cannot be known; `reason` then says why."""

    total: Decimal | None
    input_tokens: int
    output_tokens: int | None
    cost: Cost | None = None
    reason: str | None = None


class CostEstimator:
    """Worst-case cost of a call to one model."""

    def __init__(self, model: ResolvedModel) -> None:
        self.model = model

    def estimate_request(
        self, request: Any, *, tokenizer: LocalTokenizer | None = None, batch: bool = False
    ) -> CostEstimate:
        """The worst case of a provider `ChatRequest`: its input estimated locally (erring high), its output limit,
        its service tier, and cache writes when it asks for caching on a model that may cache."""
        from onellm.catalog.counting import TokenEstimator

        estimator = TokenEstimator(self.model, tokenizer=tokenizer)
        tools = [*(getattr(request, "tools", None) or ()), *(getattr(request, "hosted_tools", None) or ())]
        tokens = estimator.messages(request.messages, system=getattr(request, "system", None), tools=tools)
        cache = getattr(request, "cache", None)
        may_cache = (
            cache is not None
            and getattr(cache, "enabled", True) is not False
            and self.model.entry.supports("caching") is not False
        )
        return self.estimate(
            tokens,
            max_output_tokens=getattr(request, "max_output_tokens", None),
            may_write_cache=may_cache,
            service_tier=getattr(request, "service_tier", None),
            batch=batch,
        )

    def estimate(
        self,
        input_tokens: int,
        *,
        max_output_tokens: int | None = None,
        may_write_cache: bool = False,
        service_tier: str | None = None,
        batch: bool = False,
        region: str | None = None,
        multipliers: Sequence[str] = (),
    ) -> CostEstimate:
        from onellm.messages import Usage

        output = max_output_tokens if max_output_tokens is not None else self.model.entry.max_output_tokens
        if output is None:
            return CostEstimate(
                None, input_tokens, None, reason=f"{self.model.qualified_name} has no output limit in the catalog"
            )
        variants = [Usage(input_tokens=input_tokens, output_tokens=output)]
        if may_write_cache:
            variants.append(Usage(cache_creation_input_tokens=input_tokens, output_tokens=output))
        worst: Cost | None = None
        for usage in variants:
            cost = self.model.price(
                usage, service_tier=service_tier, batch=batch, region=region, multipliers=multipliers
            )
            if not cost.priced:
                return CostEstimate(
                    None,
                    input_tokens,
                    output,
                    cost=cost,
                    reason=f"{self.model.qualified_name} has no complete price in the catalog",
                )
            if worst is None or cost.total > worst.total:
                worst = cost
        assert worst is not None
        return CostEstimate(worst.total, input_tokens, output, cost=worst)


_LOCK = threading.Lock()


@dataclass(eq=False)
class SpendCap:
    """A cap on money spent: the runtime's, one instance's, or any other scope. Shared between guards freely."""

    limit: Decimal
    kind: BudgetKind = BudgetKind.SPEND
    spent: Decimal = _ZERO
    reserved: Decimal = field(default=_ZERO)
    name: str | None = None

    @property
    def available(self) -> Decimal:
        return self.limit - self.spent - self.reserved


class Reservation:
    """Money held on caps for one call in flight. Settle it with `commit(actual)` or `release()` (exactly once)."""

    def __init__(self, amount: Decimal, caps: tuple[SpendCap, ...]) -> None:
        self.amount = amount
        self.caps = caps
        self.settled = False

    def commit(self, actual: Decimal | None) -> None:
        """The call finished: drop the hold and record what it really cost (the estimate when the cost is unknown)."""
        spent = self.amount if actual is None else actual
        with _LOCK:
            if self.settled:
                raise RuntimeError("this reservation was already settled")
            self.settled = True
            for cap in self.caps:
                cap.reserved -= self.amount
                cap.spent += spent

    def release(self) -> None:
        """The call was not made (or cost nothing): drop the hold."""
        with _LOCK:
            if self.settled:
                return
            self.settled = True
            for cap in self.caps:
                cap.reserved -= self.amount

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.settled:
            self.release()


class SpendGuard:
    """A per-call limit and spend caps, checked against worst-case estimates before a call is sent."""

    def __init__(
        self,
        *,
        max_cost_per_call: Decimal | None = None,
        spend_cap: Decimal | SpendCap | None = None,
    ) -> None:
        self.max_cost_per_call = max_cost_per_call
        if isinstance(spend_cap, SpendCap) or spend_cap is None:
            self.cap = spend_cap
        else:
            self.cap = SpendCap(Decimal(spend_cap), BudgetKind.SPEND, name="spend cap")

    @property
    def spent(self) -> Decimal:
        return self.cap.spent if self.cap is not None else _ZERO

    def reserve(
        self, estimate: CostEstimate | Decimal | None, *, caps: Iterable[SpendCap] = (), reason: str | None = None
    ) -> Reservation:
        """Hold the worst case of one call on every cap, or raise `BudgetExceededError` without holding anything.

        `caps` adds caps for this call only (an instance's cap, for example). A limit is refused, not skipped, when
        the estimate is unknown.
        """
        if isinstance(estimate, CostEstimate):
            amount = estimate.total
            reason = reason or estimate.reason
        else:
            amount = estimate
        all_caps = tuple(c for c in (self.cap, *caps) if c is not None)
        if amount is None:
            if self.max_cost_per_call is not None or all_caps:
                kind = BudgetKind.CALL_COST if self.max_cost_per_call is not None else all_caps[0].kind
                why = reason or "the call's price is unknown"
                raise BudgetExceededError(
                    f"the call was not sent: a spend limit is set and cannot be checked ({why})",
                    kind=kind,
                    limit=self.max_cost_per_call if self.max_cost_per_call is not None else all_caps[0].limit,
                )
            return Reservation(_ZERO, ())
        if self.max_cost_per_call is not None and amount > self.max_cost_per_call:
            raise BudgetExceededError(
                f"the call could cost up to {amount} USD, more than the per-call limit of {self.max_cost_per_call}",
                kind=BudgetKind.CALL_COST,
                limit=self.max_cost_per_call,
                spent=amount,
            )
        with _LOCK:
            for cap in all_caps:
                if cap.spent + cap.reserved + amount > cap.limit:
                    raise BudgetExceededError(
                        f"the call could cost up to {amount} USD; {cap.name or cap.kind.value} has "
                        f"{cap.limit - cap.spent - cap.reserved} USD left of {cap.limit} "
                        f"({cap.spent} spent, {cap.reserved} held for calls in flight)",
                        kind=cap.kind,
                        limit=cap.limit,
                        spent=cap.spent,
                    )
            for cap in all_caps:
                cap.reserved += amount
        return Reservation(amount, all_caps)


_publish("onellm", SpendCap)
_publish("onellm.catalog", CostEstimate, CostEstimator, Reservation, SpendGuard)
