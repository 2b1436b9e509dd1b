"""The one place the command meets the agent loop and the decider engines of onellm-core.

An agent run is started with `Runtime.start_agent` (or picked up again with `Runtime.get_agent`) and driven through
`AgentRun.events()`: the turn and tool-call lines come from its events, and each `ApprovalNeeded` is asked at the
terminal and answered with `AgentRun.approve` or `AgentRun.deny` while the run rests. End of input decides nothing:
the call stays held in the saved instance, and the run's rest is reported as it is. A decider runs through
`Runtime.decide`; core finds its logic (a `decider.js` through onellm-js, a `decider.py` beside it) by itself.

When the installed onellm-core has no agent loop (`onellm.start_agent`) or no decider engines (`onellm.decide`), the
commands that need them stop with exit code 3 and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

import onellm
from onellm_cli._errors import EXIT_SETUP, CliError

if TYPE_CHECKING:
    from onellm import AgentResult, AgentRun, DecisionResult, Runtime
    from onellm.definitions import Definition
    from onellm_cli._approve import TerminalApprovals
    from onellm_cli._output import Reporter

__all__ = [
    "AgentOutcome",
    "agents_available",
    "decide",
    "deciders_available",
    "require_agents",
    "resume_agent",
    "run_agent",
]


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


@dataclass(slots=True)
class AgentOutcome:
    """Where an agent run came to rest, and what the command did about it."""

    result: AgentResult[Any]
    """The run's result (its stop reason, result, text, question, saved instance)."""
    left_held: bool = False
    """A held call was left undecided (end of input): it stays held in the saved instance."""
    unsent: str | None = None
    """The message `--prompt` gave that was not delivered, because a call is still held."""


async def run_agent(
    runtime: Runtime,
    definition: Definition,
    *,
    inputs: dict[str, Any],
    prompt: str | None,
    model: str | None,
    approvals: TerminalApprovals,
    reporter: Reporter,
) -> AgentOutcome:
    """Start an agent and drive it to rest, asking about held calls at the terminal.

    Raises:
        BadDefinitionError, ModelNotFoundError, AuthError: the run cannot start (nothing was sent).
        RunCancelledError: Ctrl-C; the instance is saved `stopped` and `cancelled`.
        OnellmError: a model call failed after its retries (the instance is saved in `error`), a spend cap, a hook.
    """
    require_agents("running an agent")
    options: dict[str, Any] = {"model": model} if model is not None else {}
    run = await runtime.start_agent(definition, inputs, prompt=prompt, **options)
    if run.instance_id is not None:
        reporter.started(run.instance_id, run.instance.model)
    return await _follow(run, approvals, reporter)


async def resume_agent(
    runtime: Runtime,
    instance_id: str,
    *,
    prompt: str | None,
    approvals: TerminalApprovals,
    reporter: Reporter,
) -> AgentOutcome:
    """Pick a saved instance up again (`Runtime.get_agent`, also after a restart) and drive it to rest: ask about its
    held calls first, then deliver `prompt` (the answer to an `ask_user` question, or the next message). Without a
    prompt and with nothing held, a run that was cancelled, failed, ran out of turns or was left running by a process
    that died goes on from where it stopped.

    Raises:
        InstanceNotFoundError: the store has no such instance.
        BadDefinitionError: the file is not a valid instance, or is in a state no run leaves it in.
        InstanceLockedError: another process is running it.
    """
    require_agents("resuming an instance")
    run = await runtime.get_agent(instance_id)
    reporter.instance_id = run.instance_id
    held = list(run.pending_approvals)
    for entry in held:
        decision = await approvals.decide(entry.tool or "tool", entry.inputs)
        if decision == "leave":
            # Nothing more is asked (standard input has ended): every call not yet decided stays held, and the
            # run is not driven, since it would only come to rest again where it is.
            outcome = AgentOutcome(await run.result(), left_held=True, unsent=prompt)
            return outcome
        await _answer(run, entry.tool_call_id, decision, approvals, reporter, entry.tool or "tool", entry.inputs)
    if prompt is not None:
        await run.message(prompt, source="user")
    elif not held:
        run.resume()
    return await _follow(run, approvals, reporter)


async def _follow(run: AgentRun[Any], approvals: TerminalApprovals, reporter: Reporter) -> AgentOutcome:
    """Drive `run` through its events to rest: report turns and tool calls, and ask about each held call as the run
    rests waiting for it. A call left undecided (end of input) ends the drive with the call held."""
    from onellm.agents import ApprovalNeeded

    left = False
    reporter.following = True
    try:
        async for event in run.events():
            if isinstance(event, ApprovalNeeded):
                if left or event.call_id is None:
                    continue
                decision = await approvals.decide(event.tool, event.inputs)
                if decision == "leave":
                    left = True
                    continue
                await _answer(run, event.call_id, decision, approvals, reporter, event.tool, event.inputs)
            else:
                reporter.on_event(event)
    finally:
        reporter.following = False
    return AgentOutcome(await run.result(), left_held=left)


async def _answer(
    run: AgentRun[Any],
    call_id: str | None,
    decision: str,
    approvals: TerminalApprovals,
    reporter: Reporter,
    tool: str,
    inputs: Any,
) -> None:
    """Write a person's decision on a held call into the instance (before anything runs)."""
    from onellm_cli._approve import DENIED_REASON

    by = "--yes" if approvals.yes else "terminal"
    if decision == "approve":
        await run.approve(call_id, by=by)
    else:
        await run.deny(call_id, reason=DENIED_REASON, by=by)
        reporter.denied(tool, inputs)


async def decide(runtime: Runtime, target: Path, inputs: dict[str, Any]) -> DecisionResult[Any]:
    """Run a decider (a folder holding `decider.yaml`, or the file) on `runtime` and return its result.

    A `decider.js` or `decider.ts` beside it is its logic, which needs the js extra: without it the command stops
    with exit code 3 naming the extra, before anything is loaded or sent.
    """
    from onellm_cli._setup import js_extra_error

    logic_file = await anyio.to_thread.run_sync(_logic_file, target)
    if logic_file is not None:
        try:
            import onellm_js  # noqa: F401  # core loads the logic through onellm-js's entry point
        except ImportError:
            raise js_extra_error(f"{logic_file.name} beside {target}") from None
    if not deciders_available():
        raise CliError(
            f"running a decider needs the decider engines (onellm.decide), which onellm-core {onellm.__version__} "
            "does not have; install a newer onellm-core",
            EXIT_SETUP,
        )
    return await runtime.decide(target, inputs)


def _logic_file(target: Path) -> Path | None:
    """The `decider.js` or `decider.ts` beside a decider, if there is one."""
    if target.is_dir():
        folder, stem = target, "decider"
    else:
        folder = target.parent
        name = target.name
        stem = name[: -len(".yaml")] if name.endswith(".yaml") else name[: -len(".yml")]
    return next((folder / f"{stem}{ext}" for ext in (".js", ".ts") if (folder / f"{stem}{ext}").is_file()), None)
