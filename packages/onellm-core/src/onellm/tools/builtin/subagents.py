"""The tools one agent uses to start, steer and watch others: `run_agent_async`, `await_agent`, `message_agent`,
`monitor_agent`, `await_monitor`, `list_agent_instances` and `query_agent` (the agents page's table, with the names and
input properties existing definitions use).

This module holds what the model sees: each tool's name, description and input schema. What a call does is the agent
loop's business: the loop hands every call it runs an `AgentToolHost` (in `ToolContext.extra["agents"]`) bound to the
calling agent, and the tool passes its arguments on to it. Outside an agent run (no host in the context) a call fails
with an error result saying so. The tools need no grant: what they reach is bounded by the reach rules of the loop (the
calling agent and the agents it started) and every agent they start holds at most its caller's grants.

A registry finds them by name, or by the last segment of a reference path (`/runtime/agents/await-agent`), without
registering them first, as it finds `task_complete`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from onellm.errors import CapabilityMissingError
from onellm.tools import Tool, ToolContext

__all__ = ["AGENT_TOOL_NAMES", "AgentToolHost", "subagent_tool", "subagent_tools"]

AGENT_TOOL_NAMES: tuple[str, ...] = (
    "run_agent_async",
    "await_agent",
    "message_agent",
    "monitor_agent",
    "await_monitor",
    "list_agent_instances",
    "query_agent",
)
"""The sub-agent tools, in the order of the agents page's table (`task_complete`, the table's first, is in
`onellm.tools.builtin.agent`)."""


class AgentToolHost(Protocol):
    """What runs a sub-agent tool's call: the agent loop, bound to the calling agent."""

    async def call_tool(self, tool: str, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Run one call of the tool named `tool` with its checked arguments; the return value is the tool's result."""
        ...


_WAITS = frozenset({"await_agent", "await_monitor", "monitor_agent", "message_agent"})
_ID = {"type": "string", "minLength": 1, "maxLength": 128}
_DURATION = "A duration: a number of seconds, or a number with a unit, such as 90s, 30m, 2h or 1h30m (s, m, h, d)."

_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "run_agent_async": (
        "Starts another agent on a task and returns its instance id at once; it works while you go on. Give "
        "agentSwarmUri (the agent to start) and prompt (the task: what to do, where, and what to report). With "
        "agentId instead, sends prompt to an agent you started earlier and wakes it. The agent holds at most your "
        "grants. Wait for it with await_agent, or watch it with monitor_agent.",
        {
            "agentSwarmUri": {
                "type": "string",
                "minLength": 1,
                "description": "The agent to start: a name the host registered (for example examples/agent-writer), "
                "or a definition file (a .yaml, a folder holding agent.yaml, or a .flow) under the directories you "
                "may read.",
            },
            "prompt": {
                "type": "string",
                "minLength": 1,
                "description": "The task for a new agent, or the message for the agent agentId.",
            },
            "agentId": {**_ID, "description": "Send prompt to this agent (an instance id) instead of starting one."},
            "inputs": {"type": "object", "description": "Input values for the new agent's definition."},
        },
    ),
    "await_agent": (
        "Waits for agents to come to rest (finished, waiting for input or approval, or failed) and reports each: "
        "state, result, summary, cost and how full its context is. Waits for all of ids unless all is false (then "
        "for the first). Any message for you ends the wait early; the report says so.",
        {
            "ids": {
                "type": "array",
                "items": _ID,
                "minItems": 1,
                "description": "Instance ids of agents you started (run_agent_async returns them).",
            },
            "all": {"type": "boolean", "description": "Wait for every agent (default), or false for the first."},
            "timeout": {"type": ["string", "number"], "description": "Stop waiting after this long. " + _DURATION},
        },
    ),
    "message_agent": (
        "Delivers prompt to the agent agentId (one you started, or yourself): a running agent reads it at its next "
        "turn, a resting one starts working on it. To start a new agent, use run_agent_async.",
        {
            "agentId": {**_ID, "description": "The instance id of the agent to message."},
            "prompt": {"type": "string", "minLength": 1, "description": "The message."},
        },
    ),
    "monitor_agent": (
        "Arms a monitor on an agent, or with no condition reports the agent's status. The monitor fires once, when "
        "the first of its conditions holds, and you get a message (or await_monitor returns it); arming again on the "
        "same agent replaces it. elapsed only reports: it never stops the agent.",
        {
            "agentId": {**_ID, "description": "The agent to watch (one you started, or yourself)."},
            "contextAt": {
                "type": ["string", "integer"],
                "description": "Fire when the agent's context reaches this many tokens (400000, 400k, 1.2m) or "
                "this share of its model's window (80%).",
            },
            "turns": {"type": "integer", "minimum": 1, "description": "Fire after this many more model turns."},
            "onFinish": {"type": "boolean", "description": "Fire when the agent comes to rest."},
            "elapsed": {"type": ["string", "number"], "description": "Fire after this long. " + _DURATION},
        },
    ),
    "await_monitor": (
        "Waits until a monitor you armed fires and returns its alert (instead of a message). With ids, waits only for "
        "the monitors on those agents.",
        {
            "ids": {
                "type": "array",
                "items": _ID,
                "minItems": 1,
                "description": "The watched agents whose monitors to wait for (default: all you armed).",
            },
            "timeout": {"type": ["string", "number"], "description": "Stop waiting after this long. " + _DURATION},
        },
    ),
    "list_agent_instances": (
        "Lists saved agent instances you can reach (yourself and the agents you started), newest first: id, name, "
        "state, definition and who started it.",
        {
            "name": {"type": "string", "description": "Only instances whose name contains this text (any case)."},
            "state": {
                "type": "string",
                "description": "Only instances in this state: running, waiting, waiting_for_approval, stopped, error.",
            },
            "swarm": {
                "type": "string",
                "description": "Only instances started from this definition (its agentSwarmUri, or part of it).",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "At most this many (50)."},
        },
    ),
    "query_agent": (
        "Searches an agent's messages (yours or one you started) for text, in what was said, the tool calls and "
        "their results; without query, shows its latest messages.",
        {
            "agentId": {**_ID, "description": "The agent whose conversation to search."},
            "query": {"type": "string", "description": "Words to find (every word must occur, any case)."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 200,
                "description": "At most this many messages (20).",
            },
        },
    ),
}

_REQUIRED: Mapping[str, tuple[str, ...]] = {
    "run_agent_async": ("prompt",),
    "await_agent": ("ids",),
    "message_agent": (),
    "monitor_agent": ("agentId",),
    "await_monitor": (),
    "list_agent_instances": (),
    "query_agent": ("agentId",),
}


def _handler(name: str) -> Any:
    async def handle(values: dict[str, Any], ctx: ToolContext) -> Any:
        host = ctx.extra.get("agents")
        if host is None:
            raise CapabilityMissingError(
                f"{name} works only inside an agent run of a Runtime (it starts and watches other agents)"
            )
        return await host.call_tool(name, values, ctx)

    return handle


def subagent_tool(name: str) -> Tool[..., Any]:
    """The sub-agent tool named `name` (one of `AGENT_TOOL_NAMES`).

    Raises:
        KeyError: no sub-agent tool has this name.
    """
    description, properties = _SCHEMAS[name]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(_REQUIRED[name]),
        "additionalProperties": False,
    }
    # Waiting, watching and messaging run after the calls before them in the turn (start, then watch, then wait).
    return Tool.from_schema(name, description, schema, _handler(name), parallel_safe=name not in _WAITS)


def subagent_tools() -> list[Tool[..., Any]]:
    """The seven sub-agent tools, in the table's order."""
    return [subagent_tool(name) for name in AGENT_TOOL_NAMES]
