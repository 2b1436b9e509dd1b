"""`AgentResult` and `StopReason`: what an agent run ends with, and the sums it carries (usage and cost of an instance)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from onellm._public import publish as _publish
from onellm.messages import Cost, CostLine, Usage

if TYPE_CHECKING:
    from onellm.instances import Instance, InstanceFailure, PendingApproval
    from onellm.messages import CallWarning
    from onellm.tools.builtin.agent import AskUserRequest

__all__ = ["AgentResult", "StopReason", "instance_cost", "instance_usage"]

T = TypeVar("T")

_ZERO = Decimal(0)


class StopReason(StrEnum):
    """Why a run came to rest (`spec/instances.md`, the agent loop's table)."""

    COMPLETED = "completed"
    """A loop-ending tool ran (`task_complete`, or a tool with `ends_loop`). State `stopped`."""
    WAITING = "waiting"
    """The model answered without calling a tool, or asked the person a question (`ask_user`). State `waiting`."""
    WAITING_FOR_APPROVAL = "waiting_for_approval"
    """A tool call waits for a person's decision. State `waiting_for_approval`."""
    MAX_ITERATIONS = "max_iterations"
    """The run used its `maxIterations` model turns. State `error`, with the error `MaxIterations`."""
    STOPPED = "stopped"
    """Only for an instance picked up at rest: it is `stopped` without a loop-ending call (a fork, a script)."""
    CANCELLED = "cancelled"
    """Only for an instance picked up at rest: its latest run was cancelled (a run being cancelled raises
    `RunCancelledError`)."""
    ERROR = "error"
    """Only for an instance picked up at rest: its latest run failed (a failing run raises its error)."""


@dataclass(kw_only=True, repr=False)
class AgentResult(Generic[T]):
    """What an agent run came to: why it stopped, the result, the last text, usage and cost, and the saved instance.

    <!-- skip: next "an outline; docs/agents.md runs whole agents" -->

    ```python
    result = await onellm.run_agent("agents/clerk.yaml", {"caseNo": "24-1234"})
    print(f"{result.stop_reason}: {result.text} ({result.cost.total})")
    ```
    """

    stop_reason: StopReason
    """Why the run stopped."""
    text: str
    """The `task_complete` result when it is text, else the model's last text."""
    instance: Instance
    """The instance, as saved."""
    result: Any = None
    """The `result` the run was completed with (`task_complete`), or a loop-ending tool's return value."""
    summary: str | None = None
    """The summary `task_complete` was given."""
    title: str | None = None
    """The title `task_complete` was given, if any."""
    output: T | None = None
    """The typed output: `result` as the `output=` type, or as the JSON the definition's `outputSchema` describes.
    None when the run declares no output or did not complete."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of every model turn of the instance, added up."""
    cost: Cost = field(default_factory=Cost)
    """What the instance has cost: every model turn and every tool call, over all its runs."""
    subtree_cost: Cost = field(default_factory=Cost)
    """The instance's cost with that of the instances it started."""
    turns: int = 0
    """Model turns this run made."""
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    """The calls waiting for a decision (stop reason `waiting_for_approval`)."""
    question: AskUserRequest | None = None
    """The question `ask_user` put to the person, while it waits for the answer."""
    question_call_id: str | None = None
    """The `ask_user` call the next message from the person answers."""
    error: InstanceFailure | None = None
    """The failure that put the instance in `error` (`MaxIterations`, for one that ran out of turns)."""
    warnings: list[CallWarning] = field(default_factory=list)
    """What was dropped or ignored: lenient references, hooks left out, pricing notices."""

    @property
    def instance_id(self) -> str | None:
        """The instance's id."""
        return self.instance.id

    @property
    def state(self) -> str | None:
        """The instance's state."""
        return self.instance.state

    def __repr__(self) -> str:
        return (
            f"AgentResult(stop_reason={self.stop_reason.value!r}, text={self.text!r}, "
            f"instance={self.instance.id!r}, cost={self.cost.total})"
        )


def instance_cost(instance: Instance) -> Cost:
    """What an instance has cost: its model turns, its tool calls and the compactions it ran (with the cost of the
    messages they removed), as line items and an exact total."""
    lines: list[CostLine] = []
    total = _ZERO
    for message in instance.messages:
        usage = message.usage
        if usage is not None:
            if usage.cost_lines:
                lines.extend(usage.cost_lines)
            if usage.cost is not None:
                total += usage.cost
            elif usage.cost_lines:
                total += sum((line.amount for line in usage.cost_lines), _ZERO)
        for call in message.tool_calls:
            if call.cost_lines:
                lines.extend(call.cost_lines)
            if call.cost is not None:
                total += call.cost
            elif call.cost_lines:
                total += sum((line.amount for line in call.cost_lines), _ZERO)
    for compaction in instance.compactions:
        if compaction.cost is not None:
            total += compaction.cost
        if compaction.replaced_cost is not None:
            total += compaction.replaced_cost
    return Cost(lines=tuple(lines), total=total)


def instance_usage(instance: Instance) -> Usage:
    """The tokens of every model turn of an instance, added up (the model named when all turns used one)."""
    models: set[str] = set()
    input_tokens = output_tokens = cache_creation = cache_read = 0  # locals: cheaper to add to than list items
    counters: dict[str, int | Decimal] = {}
    for message in instance.messages:
        usage = message.usage
        if usage is None:
            continue
        if usage.model is not None:
            models.add(usage.model)
        input_tokens += usage.input_tokens
        output_tokens += usage.output_tokens
        cache_creation += usage.cache_creation_input_tokens
        cache_read += usage.cache_read_input_tokens
        if usage.counters:
            for key, value in usage.counters.items():
                counters[key] = counters.get(key, 0) + value
    return Usage(
        model=next(iter(models)) if len(models) == 1 else None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_creation_input_tokens=cache_creation,
        cache_read_input_tokens=cache_read,
        counters=counters,
    )


_publish("onellm", AgentResult, StopReason)
