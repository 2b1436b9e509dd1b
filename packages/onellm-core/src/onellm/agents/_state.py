"""What a resumed run checks and repairs in an instance before it goes on.

Checked (a `BadDefinitionError` naming the instance and the key; nothing is changed): two calls of one message with the
same id, a pending approval for a call no message holds (or that already has a result, or listed twice), a decision
other than `approved` or `denied`, a pending approval naming another tool than its call, an open `askUser` for a call
that does not exist or already has a result.

Repaired (`spec/instances.md`, "A call with no result"): a tool call with no result that waits for nothing (no pending
approval, not the open `ask_user`) was interrupted, by a crash, a kill or a copy of the instance made before it ran. It
is never run again, because it may already have taken effect: it gets an error result that says so, and the model
decides what to do. The same holds for an approved call that had started (`startedAt` in its entry) when the run
stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onellm.errors import BadDefinitionError

if TYPE_CHECKING:
    from onellm.instances import Instance
    from onellm.messages import ToolCall

__all__ = ["INTERRUPTED", "INTERRUPTED_AFTER_APPROVAL", "check_instance", "find_call", "orphans"]

INTERRUPTED = (
    "This call has no result: the run stopped before it finished (the process ended, or the conversation was copied "
    "before the call ran). It was not run again, because it may already have taken effect."
)
INTERRUPTED_AFTER_APPROVAL = (
    "This call was approved and started, but the run stopped before its result was saved. It was not run again, "
    "because it may already have taken effect."
)


def _bad(instance: Instance, where: str, path: str, message: str) -> BadDefinitionError:
    return BadDefinitionError(f"instance {instance.id}: {message}", file=where, path=path)


def find_call(instance: Instance, call_id: str | None, message_id: str | None = None) -> tuple[int, int] | None:
    """(message index, call index) of a tool call: in the message `message_id` when given, else the latest with that
    id."""
    if call_id is None:
        return None
    messages = instance.messages
    for mi in range(len(messages) - 1, -1, -1):
        message = messages[mi]
        if message_id is not None and message.id != message_id:
            continue
        for ci, call in enumerate(message.tool_calls):
            if call.id == call_id:
                return mi, ci
        if message_id is not None:
            return None
    return None


def check_instance(instance: Instance, where: str) -> None:
    """Refuse an instance in a state no run can leave it in (see the module docstring).

    Raises:
        BadDefinitionError: naming the instance, the file (`where`) and the key.
    """
    for mi, message in enumerate(instance.messages):
        if len(message.tool_calls) > 1:
            seen: dict[str, int] = {}
            for ci, call in enumerate(message.tool_calls):
                if call.id is None:
                    continue
                if call.id in seen:
                    raise _bad(
                        instance,
                        where,
                        f"messages[{mi}].toolCalls[{ci}].id",
                        f"message {message.id} holds two tool calls with the id {call.id!r} "
                        f"(toolCalls[{seen[call.id]}] and toolCalls[{ci}]); one call has one result",
                    )
                seen[call.id] = ci
    listed: set[str] = set()
    for i, entry in enumerate(instance.pending_approvals):
        path = f"pendingApprovals[{i}]"
        if entry.tool_call_id is None:
            raise _bad(instance, where, f"{path}.toolCallId", "a pending approval names no tool call")
        if entry.tool_call_id in listed:
            raise _bad(instance, where, path, f"tool call {entry.tool_call_id!r} has two pending approvals")
        listed.add(entry.tool_call_id)
        if entry.decision not in (None, "approved", "denied"):
            raise _bad(
                instance, where, f"{path}.decision", f"decision {entry.decision!r} is neither 'approved' nor 'denied'"
            )
        if entry.message_id is not None and instance.message(entry.message_id) is None:
            raise _bad(
                instance,
                where,
                f"{path}.messageId",
                f"a pending approval names message {entry.message_id!r}, which the instance does not hold",
            )
        found = find_call(instance, entry.tool_call_id, entry.message_id)
        if found is None:
            raise _bad(
                instance,
                where,
                f"{path}.toolCallId",
                f"a pending approval names tool call {entry.tool_call_id!r}, which no message holds",
            )
        call = instance.messages[found[0]].tool_calls[found[1]]
        if call.result is not None:
            raise _bad(
                instance,
                where,
                f"{path}.toolCallId",
                f"tool call {entry.tool_call_id!r} waits for approval but already has a result",
            )
        if entry.tool is not None and entry.tool != call.tool:
            # A person decides on the entry's tool and the call's runs: the two must be one.
            raise _bad(
                instance,
                where,
                f"{path}.tool",
                f"the pending approval of tool call {entry.tool_call_id!r} names tool {entry.tool!r}, but the call is "
                f"to {call.tool!r}",
            )
    ask = instance.ask_user
    if ask is not None:
        found = find_call(instance, ask.tool_call_id, ask.message_id)
        if found is None:
            raise _bad(
                instance,
                where,
                "askUser.toolCallId",
                f"askUser names tool call {ask.tool_call_id!r}, which no message holds",
            )
        if instance.messages[found[0]].tool_calls[found[1]].result is not None:
            raise _bad(
                instance,
                where,
                "askUser.toolCallId",
                f"the question of tool call {ask.tool_call_id!r} already has an answer",
            )


def orphans(instance: Instance) -> list[tuple[int, int, ToolCall]]:
    """The tool calls with no result that wait for nothing: (message index, call index, call)."""
    waiting = {e.tool_call_id for e in instance.pending_approvals if e.extra.get("startedAt") is None}
    if instance.ask_user is not None:
        waiting.add(instance.ask_user.tool_call_id)
    found: list[tuple[int, int, ToolCall]] = []
    for mi, message in enumerate(instance.messages):
        for ci, call in enumerate(message.tool_calls):
            if call.result is None and (call.id is None or call.id not in waiting):
                found.append((mi, ci, call))
    return found
