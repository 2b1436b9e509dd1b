"""The events of an agent run, as `AgentRun.events()` yields them.

Each event is a small frozen value naming the instance it belongs to. A run builds them only while someone iterates
`events()`; `result()` alone builds none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from onellm._public import publish as _publish

if TYPE_CHECKING:
    from onellm.messages import Cost, Part, Usage

__all__ = [
    "AgentEvent",
    "ApprovalNeeded",
    "ContextCompacted",
    "CostIncurred",
    "MessageDelivered",
    "MonitorFired",
    "QuestionAsked",
    "StateChanged",
    "SubAgentStarted",
    "ToolCallEnded",
    "ToolCallStarted",
    "TurnEnded",
    "TurnStarted",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEvent:
    """Something that happened in an agent run."""

    instance_id: str | None
    """The instance the run belongs to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(AgentEvent):
    """A model call is about to be made."""

    turn: int
    """The model turn's number in this run, from 1."""
    message_id: str | None
    """The message the answer goes into."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded(AgentEvent):
    """The model answered."""

    turn: int
    """The model turn's number in this run, from 1."""
    message_id: str | None
    """The message that holds the answer."""
    text: str
    """The answer's text (empty when it only calls tools)."""
    tool_calls: int
    """How many tools the answer calls."""
    usage: Usage | None
    """The call's tokens, as the provider reported them."""
    cost: Cost
    """What the call cost."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(AgentEvent):
    """A tool call is about to run (or to be answered without running: an unknown tool, a hook's answer)."""

    call_id: str | None
    """The tool call's id."""
    tool: str
    """The tool's name, as the model wrote it."""
    inputs: dict[str, Any]
    """The arguments the tool gets."""
    injected: bool = False
    """The call came from the definition's initial prompts, not from the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnded(AgentEvent):
    """A tool call has its result."""

    call_id: str | None
    """The tool call's id."""
    tool: str
    """The tool's name, as the model wrote it."""
    is_error: bool
    """The call failed (or was refused, denied, cancelled); the result says why."""
    result: list[Part] = field(default_factory=list)
    """The result the model reads."""
    cost: Decimal | None = None
    """What the call charged, when it charged anything."""
    duration_ms: int | None = None
    """How long the tool ran; None when it did not run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalNeeded(AgentEvent):
    """A tool call is held until a person approves or denies it (`AgentRun.approve`, `AgentRun.deny`)."""

    call_id: str | None
    """The held call's id: pass it to `approve` or `deny`."""
    tool: str
    """The tool's name."""
    inputs: dict[str, Any]
    """The arguments the call would run with."""
    reason: str | None
    """Why it needs approval (for a shell command under loop approval: the command, shown safely)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionAsked(AgentEvent):
    """The model asked the person a question (`ask_user`); the next message from the person answers it."""

    call_id: str | None
    """The `ask_user` call's id."""
    question: str
    """The question."""
    choices: tuple[str, ...] = ()
    """Suggested answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageDelivered(AgentEvent):
    """A message reached the agent: the task prompt, a message sent with `AgentRun.message`, or an answer to
    `ask_user`."""

    message_id: str | None
    """The message it became (for an answer to `ask_user`: the message holding the question)."""
    source: str | None
    """Who sent it: `api`, `user`, `agent`, `monitor`, `runtime`."""
    text: str
    """Its text."""
    answered_call_id: str | None = None
    """The `ask_user` call it answered, when it was an answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChanged(AgentEvent):
    """The instance moved to another state."""

    previous: str | None
    """The state before."""
    state: str
    """The state now: `running`, `waiting`, `waiting_for_approval`, `stopped` or `error`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CostIncurred(AgentEvent):
    """A model call or a tool call cost something."""

    cost: Cost
    """What this step cost."""
    total: Decimal
    """What the instance has cost so far, this step included."""
    call_id: str | None = None
    """The tool call that charged it; None for a model call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentStarted(AgentEvent):
    """The agent started another one (`run_agent_async`). `instance_id` is the caller's."""

    child_id: str | None
    """The new agent's instance id."""
    definition: str
    """What the caller named (`agentSwarmUri`)."""
    call_id: str | None = None
    """The caller's tool call that started it."""
    prompt: str = ""
    """The task it was given (`delegationPrompt`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MonitorFired(AgentEvent):
    """A monitor fired and disarmed. `instance_id` is the watched agent's; the watcher got `text` as a message from the
    runtime, or from `await_monitor`."""

    watcher_id: str | None
    """The agent that armed the monitor."""
    condition: str
    """The condition that held first: `contextAt`, `turns`, `onFinish` or `elapsed`."""
    text: str
    """The alert, as the watcher reads it."""
    state: str | None = None
    """The watched agent's state when it fired."""
    context_tokens: int | None = None
    """The watched agent's context (its latest model call's input and output tokens), when known."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCompacted(AgentEvent):
    """A context strategy ran at a turn boundary (`compactions`), or failed and the run went on uncompacted."""

    strategy: str
    """`clearToolResults`, `compact` or `providerNative`."""
    replaced_message_ids: tuple[str, ...] = ()
    """The messages it replaced."""
    summary_message_id: str | None = None
    """The summary it added (`compact`)."""
    cost: Decimal | None = None
    """What its own model call cost, when it made one."""
    context_tokens: int | None = None
    """The context that triggered it (the latest model call's input and output tokens)."""
    error: str | None = None
    """Why it failed, when it did; nothing was replaced then."""


_publish(
    "onellm.agents",
    AgentEvent,
    ApprovalNeeded,
    ContextCompacted,
    CostIncurred,
    MessageDelivered,
    MonitorFired,
    QuestionAsked,
    StateChanged,
    SubAgentStarted,
    ToolCallEnded,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
