"""The one place the command meets the agent loop and the decider engines of onellm-core.

Everything the command needs from them goes through this module: starting an agent from a definition
(`start_agent`), picking a saved one up again (`get_agent`), deciding held calls (`approve`, `deny`), steering with a
message, awaiting the run's rest (`result()`), the agent loop's own tools, and `decide` for deciders. The rest of the
command works on `AgentOutcome` and `DeciderOutcome`, so a change in those APIs is a change here only.

When the installed onellm-core has no agent loop (`onellm.start_agent`) or no decider engines (`onellm.decide`), the
commands that need them stop with exit code 3 and say so.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

import onellm
from onellm_cli._errors import EXIT_SETUP, CliError

if TYPE_CHECKING:
    from onellm import Runtime
    from onellm.definitions import Definition
    from onellm.instances import Instance
    from onellm.tools import Tool
    from onellm_cli._approve import TerminalApprovals

__all__ = [
    "AGENT_TOOL_NAMES",
    "AgentOutcome",
    "DeciderOutcome",
    "agent_tools",
    "agents_available",
    "decide",
    "deciders_available",
    "register_examples",
    "require_agents",
    "resume_agent",
    "run_agent",
]

AGENT_TOOL_NAMES = (
    "task_complete",
    "run_agent_async",
    "await_agent",
    "message_agent",
    "monitor_agent",
    "await_monitor",
    "list_agent_instances",
    "query_agent",
    "run_decider",
)
"""The tools the agent loop adds beside the built-ins (the agents page's table, and `run_decider`)."""


def agents_available() -> bool:
    """Whether the installed onellm-core has the agent loop."""
    return hasattr(onellm, "start_agent")


def deciders_available() -> bool:
    """Whether the installed onellm-core has the decider engines."""
    return hasattr(onellm, "decide")


def require_agents(what: str) -> None:
    """Stop with exit code 3 when the agent loop is missing."""
    if not agents_available():
        raise CliError(
            f"{what} needs the agent loop (onellm.start_agent), which onellm-core {onellm.__version__} does not "
            "have; install a newer onellm-core",
            EXIT_SETUP,
        )


def agent_tools() -> list[Tool[..., Any]]:
    """The agent loop's tools (`task_complete`, the sub-agent tools, `run_decider`) when core offers them as a list
    to register; empty when core registers them itself or has none."""
    if not agents_available():
        return []
    try:
        import onellm.agents as agents  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    for name in ("agent_tools", "builtin_agent_tools"):
        factory = getattr(agents, name, None)
        if callable(factory):
            return list(factory())
    return []


def register_examples(runtime: Runtime) -> None:
    """Offer the example agents to sub-agent tools by name (`examples/<name>`), where the runtime keeps registered
    definitions (`Runtime.agent_definitions`). Registered definitions hold at most their caller's grants."""
    registry = getattr(runtime, "agent_definitions", None)
    if registry is None:
        return
    from onellm_cli._examples import EXAMPLES, names

    add = getattr(registry, "add", None) or getattr(registry, "register", None)
    for name in names():
        key = f"examples/{name}"
        path = EXAMPLES / name / "agent.yaml"
        if callable(add):
            add(key, path)
        elif hasattr(registry, "__setitem__"):
            from onellm.definitions import Definition

            registry[key] = Definition.load(path)


@dataclass(slots=True)
class AgentOutcome:
    """Where an agent run came to rest."""

    instance: Instance
    stop: str
    """`completed`, `waiting`, `waiting_for_approval`, `max_iterations` or `error`."""
    result: Any = None
    """The `task_complete` result."""
    summary: str | None = None
    """The `task_complete` summary."""
    output: Any = None
    """The typed output, when the definition declares one."""
    text: str | None = None
    """The last answer."""
    left_held: bool = False
    """True when a held call was left undecided (end of input)."""


@dataclass(slots=True)
class DeciderOutcome:
    """A decider's run: its outputs (or answers) and the saved instance."""

    outputs: Any
    instance: Instance | None


_STOPS = {
    "completed": "completed",
    "complete": "completed",
    "waiting": "waiting",
    "waitingforapproval": "waiting_for_approval",
    "maxiterations": "max_iterations",
    "error": "error",
    "failed": "error",
}


def _stop_of(result: Any) -> str:
    raw = getattr(result, "stop_reason", None)
    raw = getattr(raw, "value", raw)
    key = str(raw or "").replace("_", "").replace("-", "").lower()
    if key in _STOPS:
        return _STOPS[key]
    instance = getattr(result, "instance", None)
    state = getattr(instance, "state", None)
    return {"stopped": "completed", "waiting_for_approval": "waiting_for_approval"}.get(
        str(state), str(state or "error")
    )


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _outcome(result: Any) -> AgentOutcome:
    instance = getattr(result, "instance", None)
    if instance is None:
        raise CliError("the agent loop returned no instance", EXIT_SETUP)
    return AgentOutcome(
        instance=instance,
        stop=_stop_of(result),
        result=getattr(result, "result", None),
        summary=getattr(result, "summary", None),
        output=getattr(result, "output", None),
        text=getattr(result, "text", None) or getattr(result, "last_text", None),
    )


async def _settle(run: Any, result: Any, approvals: TerminalApprovals) -> AgentOutcome:
    """Ask about every held call until the run rests for another reason, or a call is left held."""
    asked: set[tuple[str, ...]] = set()
    while _stop_of(result) == "waiting_for_approval":
        instance = result.instance
        pending = [p for p in instance.pending_approvals if not p.decided]
        key = tuple(str(p.tool_call_id) for p in pending)
        if not pending or key in asked:
            break
        asked.add(key)
        for held in pending:
            decision = await approvals.decide(held.tool or "tool", held.inputs)
            if decision == "leave":
                outcome = _outcome(result)
                outcome.left_held = True
                return outcome
            if decision == "approve":
                await _maybe(run.approve(held.tool_call_id))
            else:
                from onellm_cli._approve import DENIED_REASON

                await _maybe(run.deny(held.tool_call_id, reason=DENIED_REASON))
        result = await run.result()
    return _outcome(result)


def _start(runtime: Runtime) -> Any:
    start = getattr(runtime, "start_agent", None)
    if start is not None:
        return start
    return onellm.start_agent  # type: ignore[attr-defined,unused-ignore]


async def run_agent(
    runtime: Runtime,
    definition: Definition,
    *,
    inputs: dict[str, Any],
    prompt: str | None,
    approvals: TerminalApprovals,
) -> AgentOutcome:
    """Run an agent to rest, asking about held calls at the terminal."""
    require_agents("running an agent")
    options: dict[str, Any] = {"inputs": inputs}
    if prompt is not None:
        options["prompt"] = prompt
    with onellm.use_runtime(runtime):
        run = await _maybe(_start(runtime)(definition, **options))
        result = await run.result()
        return await _settle(run, result, approvals)


async def resume_agent(
    runtime: Runtime,
    instance: Instance,
    *,
    prompt: str | None,
    approvals: TerminalApprovals,
) -> AgentOutcome:
    """Continue a saved instance: answer its held calls, or give it the next message."""
    require_agents("resuming an instance")
    with onellm.use_runtime(runtime):
        run = await _maybe(runtime.get_agent(instance.id))  # type: ignore[attr-defined,unused-ignore]
        if run is None:
            raise CliError(f"no instance {instance.id}", 1)
        if instance.state == "waiting_for_approval" and any(not p.decided for p in instance.pending_approvals):
            holder = _Resting(instance)
            outcome = await _settle(run, holder, approvals)
            if outcome.left_held or prompt is None:
                return outcome
        if prompt is not None:
            await _maybe(run.message(prompt))
        result = await run.result()
        return await _settle(run, result, approvals)


@dataclass(slots=True)
class _Resting:
    """A saved instance that rests with held calls, shaped as a run's result."""

    instance: Instance

    @property
    def stop_reason(self) -> str:
        return "waiting_for_approval"


async def decide(runtime: Runtime, target: Path, inputs: dict[str, Any]) -> DeciderOutcome:
    """Run a decider (a folder holding `decider.yaml`, or the file) and return its outputs.

    A `decider.js` or `decider.ts` beside it is its logic, which needs the js extra.
    """
    from onellm_cli._setup import js_extra_error

    logic_file = await anyio.to_thread.run_sync(_logic_file, target)
    logic: Any = None
    if logic_file is not None:
        try:
            from onellm_js import JsDeciderLogic
        except ImportError:
            raise js_extra_error(f"{logic_file.name} beside {target}") from None
    if not deciders_available():
        raise CliError(
            f"running a decider needs the decider engines (onellm.decide), which onellm-core {onellm.__version__} "
            "does not have; install a newer onellm-core",
            EXIT_SETUP,
        )
    decide_fn = getattr(runtime, "decide", None) or onellm.decide  # type: ignore[attr-defined,unused-ignore]
    options: dict[str, Any] = {"inputs": inputs}
    accepted = inspect.signature(decide_fn).parameters  # the origin stays core's default, `api`
    if logic_file is not None:
        if "logic" not in accepted:
            raise CliError(f"{logic_file}: this onellm-core cannot run decider logic from JavaScript", EXIT_SETUP)
        logic = await JsDeciderLogic.load(logic_file)
        options["logic"] = logic
    with onellm.use_runtime(runtime):
        result = await decide_fn(target, **options)
    outputs = getattr(result, "outputs", None)
    if outputs is None:
        answers = getattr(result, "answers", None) or {}
        outputs = {key: _plain_answer(value) for key, value in dict(answers).items()}
    return DeciderOutcome(outputs=outputs, instance=getattr(result, "instance", None))


def _logic_file(target: Path) -> Path | None:
    """The `decider.js` or `decider.ts` beside a decider, if there is one."""
    folder = target if target.is_dir() else target.parent
    return next((folder / n for n in ("decider.js", "decider.ts") if (folder / n).is_file()), None)


def _plain_answer(value: Any) -> Any:
    to_data = getattr(value, "to_data", None)
    if callable(to_data):
        return to_data()
    import msgspec

    return msgspec.to_builtins(value)
