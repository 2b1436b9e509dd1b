"""Sub-agents: what the agent tools do (`run_agent_async`, `await_agent`, `message_agent`, `monitor_agent`,
`await_monitor`, `list_agent_instances`, `query_agent`), the runs a runtime holds live, the monitors, and the reach
rules.

**Reach.** An agent reaches itself and the agents it started, found by following `spawnerInstanceId` (live or saved),
unless `Runtime.agents_may_reach_any_instance` is set. Calls on the `Runtime` itself are never restricted.

**Grants.** A child runs with its caller's grants (`Capabilities.intersect` of the runtime's and the caller's, which
are already the runtime's at most), recorded in its file and re-applied on every resume. A definition file is read
only from under the caller's read roots after links are followed; a child from a file holds at most its caller's
tools plus `task_complete` (recorded as `capabilities.tools`). A definition the host registered
(`Runtime.agent_definitions`) chooses its own tools, still under the caller's grants.

**Driving.** A child works while its caller goes on: it runs as a task of the caller's drive, and the caller's
`result()` returns once the caller and every child it drives are at rest. `await_agent` waits for children; a
child picked up again after a restart (saved, not live) is driven by the agent that reaches it.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from onellm.agents._events import MonitorFired, SubAgentStarted
from onellm.agents._monitors import Alert, Monitor, context_tokens, duration_text, parse_duration
from onellm.errors import (
    AgentStateError,
    ArgumentError,
    BadDefinitionError,
    CapabilityDeniedError,
    InstanceNotFoundError,
    OnellmError,
)
from onellm.messages import CallWarning, Cost, TextPart

if TYPE_CHECKING:
    from onellm.agents._run import AgentRun
    from onellm.instances import Instance
    from onellm.tools import ToolContext

__all__ = ["DEFAULT_MAX_AGENT_DEPTH", "AgentHub", "AgentTools", "hub_of", "subtree_cost"]

DEFAULT_MAX_AGENT_DEPTH = 8
"""How deep agents may nest (a child of a child ...) unless `Runtime.max_agent_depth` says otherwise."""

_ZERO = Decimal(0)
_RESTING = frozenset({"waiting", "waiting_for_approval", "stopped", "error"})
_TEXT_LIMIT = 4000


def hub_of(runtime: Any) -> AgentHub:
    """The runtime's hub of live agents and monitors (made on first use)."""
    hub = getattr(runtime, "_agent_hub", None)
    if hub is None:
        hub = AgentHub(runtime)
        runtime._agent_hub = hub
    return hub


class AgentHub:
    """What one runtime knows about its agents in this process: the runs it holds live, the monitors armed, and who
    waits in `await_monitor`."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.live: weakref.WeakValueDictionary[str, AgentRun[Any]] = weakref.WeakValueDictionary()
        self.monitors: dict[str, dict[str, Monitor]] = {}
        """target id -> watcher id -> monitor."""
        self.alerts: dict[str, list[Alert]] = {}
        """watcher id -> alerts it waits for in `await_monitor`."""
        self.awaiting: dict[str, frozenset[str] | None] = {}
        """watcher id -> the targets it waits for in `await_monitor` (None: all)."""
        self._changed = anyio.Event()

    # ------------------------------------------------------------------------------------------------ changes

    def changed(self) -> None:
        """Something a waiter may care about happened: a run rested, a message arrived, a monitor fired."""
        event, self._changed = self._changed, anyio.Event()
        event.set()

    async def wait_change(self, deadline: float | None) -> bool:
        """Wait for the next change; False when `deadline` (anyio's clock) passed first."""
        event = self._changed
        if deadline is None:
            await event.wait()
            return True
        left = deadline - anyio.current_time()
        if left <= 0:
            return False
        with anyio.move_on_after(left):
            await event.wait()
            return True
        return False

    def register(self, run: AgentRun[Any]) -> None:
        if run.instance_id is not None:
            self.live[run.instance_id] = run

    # ------------------------------------------------------------------------------------------------ finding

    async def find(self, instance_id: str) -> AgentRun[Any]:
        """The live run of `instance_id`, or the saved instance picked up as a run.

        Raises:
            InstanceNotFoundError: no such instance.
        """
        run = self.live.get(instance_id)
        if run is not None:
            return run
        from onellm.agents._verbs import load_agent_run

        try:
            run = await load_agent_run(self.runtime.services, instance_id, runtime=self.runtime)
        except InstanceNotFoundError:
            raise InstanceNotFoundError(
                f"no agent instance {instance_id!r}: give an id that run_agent_async or list_agent_instances returned",
                instance_id=instance_id,
            ) from None
        except Exception as exc:
            if "not a valid instance id" in str(exc) or isinstance(exc, ValueError):
                raise InstanceNotFoundError(f"no agent instance {instance_id!r}", instance_id=instance_id) from None
            raise
        self.live.setdefault(instance_id, run)
        return self.live[instance_id]

    async def spawner_of(self, instance_id: str) -> str | None:
        run = self.live.get(instance_id)
        if run is not None:
            return run.instance.spawner_instance_id
        try:
            loaded = await self.runtime.store.load(instance_id)
        except Exception:
            return None
        return loaded.spawner_instance_id if loaded is not None else None

    async def depth(self, instance: Instance) -> int:
        """How many spawners are above `instance` (0 for a top-level agent), counted up to one past the limit."""
        limit = self.max_depth()
        depth = 0
        seen = {instance.id}
        current = instance.spawner_instance_id
        while current is not None and depth <= limit:
            depth += 1
            if current in seen:
                return limit + 1  # a loop of spawner links: treat as too deep
            seen.add(current)
            current = await self.spawner_of(current)
        return depth

    def max_depth(self) -> int:
        value = getattr(self.runtime, "max_agent_depth", DEFAULT_MAX_AGENT_DEPTH)
        return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_AGENT_DEPTH

    async def reaches(self, caller: str, target: str) -> bool:
        """Whether the agent `caller` may work on `target`: itself, an agent it started (following
        `spawnerInstanceId`), or any when the runtime allows it."""
        if caller == target or getattr(self.runtime, "agents_may_reach_any_instance", False):
            return True
        current: str | None = target
        seen: set[str] = set()
        while current is not None and current not in seen and len(seen) <= self.max_depth() + 1:
            seen.add(current)
            current = await self.spawner_of(current)
            if current == caller:
                return True
        return False

    async def reach(self, caller: AgentRun[Any], target: Any, name: str) -> AgentRun[Any]:
        """The run of `target` if `caller` may work on it.

        Raises:
            ArgumentError: `target` is not an instance id.
            InstanceNotFoundError: no such instance.
            CapabilityDeniedError: `caller` may not reach it (rule `agent-reach`).
        """
        if not isinstance(target, str) or not target:
            raise ArgumentError("must be an agent's instance id", [name])
        caller_id = caller.instance_id or ""
        if target == caller_id:
            return caller
        if not await self.reaches(caller_id, target):
            if target not in self.live and await self._missing(target):
                raise InstanceNotFoundError(
                    f"no agent instance {target!r}: give an id that run_agent_async or list_agent_instances returned",
                    instance_id=target,
                )
            raise CapabilityDeniedError(
                f"agent {target!r} is not one you started: an agent reaches itself and the agents it started",
                target=target,
                rule="agent-reach",
            )
        return await self.find(target)

    async def _missing(self, instance_id: str) -> bool:
        """Whether the store holds no instance `instance_id`.

        Raises:
            BadDefinitionError, StorageError: it holds one, in a file that cannot be read (so its spawner is unknown).
        """
        try:
            return await self.runtime.store.load(instance_id) is None
        except ValueError:
            return True  # not an instance id
        except OnellmError:
            raise  # a damaged file is not a missing one: the error names it
        except Exception:
            return True

    # ----------------------------------------------------------------------------------------------- monitors

    def arm(self, monitor: Monitor) -> Monitor | None:
        """Arm `monitor`, replacing the one its watcher had on the same agent; returns the replaced one."""
        watchers = self.monitors.setdefault(monitor.target, {})
        old = watchers.get(monitor.watcher)
        watchers[monitor.watcher] = monitor
        return old

    def armed_by(self, watcher: str) -> list[Monitor]:
        return [m for watchers in self.monitors.values() for w, m in watchers.items() if w == watcher]

    def check(self, run: AgentRun[Any], *, turn: bool = False, rested: bool = False) -> None:
        """Fire the monitors on `run` whose condition holds now (after a model turn, or as it rests)."""
        target = run.instance_id
        watchers = self.monitors.get(target or "")
        if not watchers:
            return
        now = self.runtime.clock.now()
        inst = run.instance
        tokens, _ = context_tokens(inst.messages)
        for monitor in list(watchers.values()):
            if turn:
                monitor.turns_seen += 1
            condition = None
            threshold = monitor.threshold()
            if threshold is not None and tokens is not None and tokens >= threshold:
                condition = "contextAt"
            elif monitor.turns is not None and monitor.turns_seen >= monitor.turns:
                condition = "turns"
            elif rested and monitor.on_finish:
                condition = "onFinish"
            elif monitor.deadline_passed(now):
                condition = "elapsed"
            if condition is not None:
                self.fire(monitor, condition, inst.state, tokens)

    def fire(self, monitor: Monitor, condition: str, state: str | None, tokens: int | None) -> None:
        """Disarm `monitor` and tell its watcher: through `await_monitor` when it waits there, else a message from the
        runtime. An event goes to `Runtime.agent_events`."""
        watchers = self.monitors.get(monitor.target)
        if watchers is None or watchers.get(monitor.watcher) is not monitor:
            return  # replaced or fired already
        del watchers[monitor.watcher]
        if not watchers:
            del self.monitors[monitor.target]
        target_run = self.live.get(monitor.target)
        name = target_run.instance.name if target_run is not None else None
        what = {
            "contextAt": f"its context reached {tokens:,} tokens" if tokens is not None else "its context grew",
            "turns": f"it made {monitor.turns_seen} more model turn(s)",
            "onFinish": f"it came to rest ({state})",
            "elapsed": f"{duration_text(monitor.elapsed or 0)} passed since the monitor was armed",
        }[condition]
        label = f"{monitor.target} ({name})" if name else monitor.target
        text = f"[monitor] agent {label}: {what}. State: {state}."
        if tokens is not None and condition != "contextAt":
            text += f" Context: {tokens:,} tokens."
        alert = Alert(monitor.watcher, monitor.target, condition, text, state, tokens)
        watcher_run = self.live.get(monitor.watcher)
        if monitor.watcher in self.awaiting and (
            (wanted := self.awaiting[monitor.watcher]) is None or monitor.target in wanted
        ):
            self.alerts.setdefault(monitor.watcher, []).append(alert)
        elif watcher_run is not None:
            watcher_run._queue_runtime_message(text)
        event = MonitorFired(
            instance_id=monitor.target,
            watcher_id=monitor.watcher,
            condition=condition,
            text=text,
            state=state,
            context_tokens=tokens,
        )
        if watcher_run is not None and watcher_run._following:
            watcher_run._events.append(event)
        publish(self.runtime, event)
        self.changed()


def publish(runtime: Any, event: Any) -> None:
    """Hand `event` to `Runtime.agent_events` when anyone listens there."""
    events = getattr(runtime, "_agent_events", None)
    if events:
        events.publish(event)


# ------------------------------------------------------------------------------------------------ the tools


class AgentTools:
    """The agent tools' host for one calling agent (handed to the tools in `ToolContext.extra["agents"]`)."""

    __slots__ = ("hub", "run")

    def __init__(self, run: AgentRun[Any], hub: AgentHub) -> None:
        self.run = run
        self.hub = hub
        hub.register(run)  # a watcher or a caller is reachable by the runs it starts and watches

    async def call_tool(self, tool: str, arguments: dict[str, Any], context: ToolContext) -> Any:
        method = getattr(self, "_" + tool, None)
        if method is None:
            raise ArgumentError(f"is not an agent tool: {tool!r}")
        return await method(arguments, context)

    # ------------------------------------------------------------------------------------- run_agent_async

    async def _run_agent_async(self, args: dict[str, Any], context: ToolContext) -> Any:
        prompt = args.get("prompt")
        agent_id = args.get("agentId")
        if agent_id is not None:
            if not isinstance(prompt, str) or not prompt.strip():
                raise ArgumentError("is required with agentId: the message for the agent", ["prompt"])
            target = await self.hub.reach(self.run, agent_id, "agentId")
            return await self._deliver(target, prompt)
        uri = args.get("agentSwarmUri")
        if not isinstance(uri, str) or not uri.strip():
            raise ArgumentError(
                "is required: the agent to start (a registered name or a definition file); or give agentId to "
                "message an agent you started",
                ["agentSwarmUri"],
            )
        if not isinstance(prompt, str) or not prompt.strip():
            raise ArgumentError("is required: the task for the new agent", ["prompt"])
        inputs = args.get("inputs")
        if inputs is not None and not isinstance(inputs, Mapping):
            raise ArgumentError("must be an object of input values", ["inputs"])
        child = await start_child(self.run, self.hub, uri.strip(), prompt, inputs, context.call_id)
        return {"agentId": child.instance_id, "name": child.instance.name, "state": "running"}

    async def _deliver(self, target: AgentRun[Any], prompt: str) -> dict[str, Any]:
        caller = self.run
        if target is caller:
            await caller.message(prompt, source="agent", name=caller.instance.name)
            return {"agentId": caller.instance_id, "delivered": True, "note": "read at your next turn"}
        target.instance.caller_instance_id = caller.instance_id
        await target.message(prompt, source="agent", name=caller.instance.name or caller.instance_id)
        target._caller_id = caller.instance_id
        caller._drive_child(target)
        self.hub.changed()
        return {"agentId": target.instance_id, "delivered": True, "state": target.state}

    # ----------------------------------------------------------------------------------------- await_agent

    async def _await_agent(self, args: dict[str, Any], context: ToolContext) -> Any:
        ids = args.get("ids")
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, list) or not ids:
            raise ArgumentError("must list the instance ids to wait for", ["ids"])
        wait_all = args.get("all", True) is not False
        deadline = _deadline(args.get("timeout"))
        runs = [await self.hub.reach(self.run, i, f"ids[{n}]") for n, i in enumerate(ids)]
        caller = self.run
        for run in runs:
            if run is not caller:
                caller._drive_child(run)
        interrupted = False
        timed_out = False
        while True:
            done = [r for r in runs if r is not caller and _at_rest(r)]
            if (wait_all and len(done) == len([r for r in runs if r is not caller])) or (not wait_all and done):
                break
            if caller._inbox:
                interrupted = True
                break
            if not await self.hub.wait_change(deadline):
                timed_out = True
                break
        reports = [await self._report(r) for r in runs]
        out: dict[str, Any] = {"agents": reports}
        if interrupted:
            out["interrupted"] = "a message for you arrived; it follows these results"
        if timed_out:
            out["timedOut"] = True
        return out

    async def _report(self, run: AgentRun[Any]) -> dict[str, Any]:
        inst = run.instance
        result = run._final() if inst.messages else None
        report: dict[str, Any] = {"agentId": inst.id, "name": inst.name, "state": inst.state}
        if result is not None:
            if result.stop_reason.value == "completed":
                report["result"] = _plain(result.result)
                if result.summary:
                    report["summary"] = result.summary
            elif inst.state in _RESTING:
                report["lastText"] = _cut(result.text)
            if result.error is not None:
                report["error"] = result.error.message
            if result.question is not None:
                report["question"] = result.question.question
            if result.pending_approvals:
                report["pendingApprovals"] = [e.tool for e in result.pending_approvals]
            report["cost"] = _money(result.cost.total)
            report["subtreeCost"] = _money((await subtree_cost(self.hub.runtime, inst, result.cost)).total)
        tokens, _ = context_tokens(inst.messages)
        if tokens is not None:
            report["contextTokens"] = tokens
            window = _window(run)
            if window:
                report["contextWindow"] = window
                report["contextPercent"] = round(100 * tokens / window, 1)
        return report

    # ----------------------------------------------------------------------------------------- message_agent

    async def _message_agent(self, args: dict[str, Any], context: ToolContext) -> Any:
        agent_id = args.get("agentId")
        prompt = args.get("prompt")
        if agent_id is None and prompt is None:
            raise ArgumentError(
                "needs agentId and prompt: it messages an agent you started; to start a new agent, use "
                "run_agent_async with agentSwarmUri and prompt"
            )
        if not isinstance(prompt, str) or not prompt.strip():
            raise ArgumentError("is required: the message", ["prompt"])
        target = await self.hub.reach(self.run, agent_id, "agentId")
        return await self._deliver(target, prompt)

    # ----------------------------------------------------------------------------------------- monitor_agent

    async def _monitor_agent(self, args: dict[str, Any], context: ToolContext) -> Any:
        target = await self.hub.reach(self.run, args.get("agentId"), "agentId")
        watcher = self.run.instance_id or ""
        monitor = Monitor.arm(watcher, target.instance_id or "", self.hub.runtime.clock.now(), args)
        inst = target.instance
        tokens, _ = context_tokens(inst.messages)
        status: dict[str, Any] = {"agentId": inst.id, "name": inst.name, "state": inst.state}
        if tokens is not None:
            status["contextTokens"] = tokens
        if monitor is None:
            armed = self.hub.monitors.get(inst.id or "", {}).get(watcher)
            status["monitor"] = armed.describe() if armed is not None else None
            return status
        monitor.window = _window(target)
        if monitor.context_percent is not None and monitor.window is None:
            raise ArgumentError(
                f"is a percentage, but the context window of {inst.model} is not known; give a token count",
                ["contextAt"],
            )
        replaced = self.hub.arm(monitor)
        status["monitor"] = monitor.describe()
        if replaced is not None:
            status["replaced"] = replaced.describe()
        if monitor.elapsed is not None:
            self.run._start_timer(self.hub, monitor)
        if target is not self.run:
            self.hub.check(target, rested=_at_rest(target))
        return status

    # ----------------------------------------------------------------------------------------- await_monitor

    async def _await_monitor(self, args: dict[str, Any], context: ToolContext) -> Any:
        watcher = self.run.instance_id or ""
        ids = args.get("ids")
        if isinstance(ids, str):
            ids = [ids]
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
            raise ArgumentError("must list instance ids", ["ids"])
        wanted = frozenset(ids) if ids else None
        armed = [m for m in self.hub.armed_by(watcher) if wanted is None or m.target in wanted]
        if not armed:
            raise AgentStateError(
                "no monitor of yours is armed"
                + (" on those agents" if wanted else "")
                + ": arm one with monitor_agent",
                instance_id=watcher,
            )
        deadline = _deadline(args.get("timeout"))
        self.hub.awaiting[watcher] = wanted
        try:
            while True:
                alerts = self.hub.alerts.pop(watcher, [])
                if alerts:
                    return {"alerts": [a.to_data() for a in alerts]}
                left = [m for m in self.hub.armed_by(watcher) if wanted is None or m.target in wanted]
                if not left:
                    return {"alerts": [], "note": "no monitor is armed any more"}
                targets = [self.hub.live.get(m.target) for m in left]
                if all(t is not None and t is not self.run and _at_rest(t) for t in targets):
                    return {
                        "alerts": [],
                        "note": "every agent you watch is at rest; its monitor can fire once it works again",
                        "armed": [m.target for m in left],
                    }
                if not await self.hub.wait_change(deadline):
                    return {"alerts": [], "timedOut": True, "armed": [m.target for m in armed]}
        finally:
            self.hub.awaiting.pop(watcher, None)

    # ------------------------------------------------------------------------------------ list_agent_instances

    async def _list_agent_instances(self, args: dict[str, Any], context: ToolContext) -> Any:
        name = args.get("name")
        state = args.get("state")
        swarm = args.get("swarm")
        limit = args.get("limit") or 50
        summaries = await self.hub.runtime.store.list()
        caller = self.run.instance_id or ""
        reach_any = bool(getattr(self.hub.runtime, "agents_may_reach_any_instance", False))
        if not reach_any:
            allowed = _descendants(caller, {s.id: s.spawner_instance_id for s in summaries})
            allowed.add(caller)
        rows: list[dict[str, Any]] = []
        for s in summaries:
            if not reach_any and s.id not in allowed:
                continue
            if isinstance(name, str) and name and (s.name is None or name.casefold() not in s.name.casefold()):
                continue
            if isinstance(state, str) and state and s.state != state:
                continue
            if isinstance(swarm, str) and swarm and (s.agent_definition is None or swarm not in s.agent_definition):
                continue
            row: dict[str, Any] = {"agentId": s.id, "name": s.name, "state": s.state}
            if s.agent_definition:
                row["agentSwarmUri"] = s.agent_definition
            if s.spawner_instance_id:
                row["spawnerInstanceId"] = s.spawner_instance_id
            row["modifiedAt"] = s.modified_at.isoformat().replace("+00:00", "Z")
            rows.append(row)
            if len(rows) >= limit:
                break
        return {"instances": rows}

    # ------------------------------------------------------------------------------------------ query_agent

    async def _query_agent(self, args: dict[str, Any], context: ToolContext) -> Any:
        target = await self.hub.reach(self.run, args.get("agentId"), "agentId")
        query = args.get("query")
        limit = args.get("limit") or 20
        words = [w.casefold() for w in query.split()] if isinstance(query, str) else []
        found: list[dict[str, Any]] = []
        for message in reversed(target.instance.messages):
            text = _searchable(message)
            folded = text.casefold()
            if words and not all(w in folded for w in words):
                continue
            found.append(
                {
                    "messageId": message.id,
                    "at": message.date_time.text if message.date_time is not None else None,
                    "text": _cut(text),
                }
            )
            if len(found) >= limit:
                break
        found.reverse()
        return {"agentId": target.instance_id, "messages": found, "total": len(target.instance.messages)}


# --------------------------------------------------------------------------------------------- starting one


async def start_child(
    parent: AgentRun[Any], hub: AgentHub, uri: str, prompt: str, inputs: Mapping[str, Any] | None, call_id: str | None
) -> AgentRun[Any]:
    """Start a child of `parent` from a registered name or a definition file, linked to it, under its grants.

    Raises:
        AgentStateError: the child would nest deeper than `Runtime.max_agent_depth`.
        CapabilityDeniedError: the definition file is outside the caller's read roots (after links are followed).
        BadDefinitionError: the definition is invalid, names a tool its caller does not hold (a file), or a tool the
            grants refuse (naming the grant).
    """
    from onellm.agents._setup import grants_summary
    from onellm.agents._verbs import start_agent_run

    runtime = hub.runtime
    inst = parent.instance
    limit = hub.max_depth()
    depth = await hub.depth(inst) + 1
    if depth > limit:
        raise AgentStateError(
            f"starting {uri!r} would nest agents {depth} deep, over the limit of {limit} (Runtime.max_agent_depth): "
            "agents that start each other in a cycle stop here",
            instance_id=inst.id,
            state=inst.state,
        )
    caps = parent._caps
    assert caps is not None
    registered = getattr(runtime, "_agent_definitions", None)
    definition: Any
    only_tools: list[str] | None = None
    if registered is not None and uri in registered:
        definition = registered.get(uri)
        name = uri
    else:
        definition = await anyio.to_thread.run_sync(_definition_file, caps, uri, parent._workdir)
        name = uri
        setup = parent._setup
        assert setup is not None
        only_tools = sorted(setup.tools)
    run = await start_agent_run(
        runtime.services,
        definition,
        dict(inputs) if inputs else None,
        prompt=prompt,
        runtime=runtime,
        capabilities=caps,
    )
    child_setup = run._setup
    assert child_setup is not None
    if only_tools is not None:
        from onellm.tools.builtin.agent import TASK_COMPLETE

        allowed = set(only_tools) | {TASK_COMPLETE}
        extra = [t for t in child_setup.tools if t not in allowed]
        if extra:
            raise BadDefinitionError(
                f"the definition references tool {extra[0]!r}, which its caller does not hold: an agent started from "
                f"a file holds at most its caller's tools ({', '.join(sorted(allowed))})",
                file=child_setup.file,
                path="references",
            )
    child = run.instance
    child.agent_definition = name
    child.spawner_instance_id = inst.id
    child.caller_instance_id = inst.id
    child.caller_tool_call_id = call_id
    child.delegation_prompt = prompt
    summary = grants_summary(caps)
    if only_tools is not None:
        summary["tools"] = sorted(set(only_tools) | {"task_complete"})
    child.capabilities = summary
    run._caller_id = inst.id
    await runtime.services.save(child)  # listed and linked at once, before its first turn
    hub.register(run)
    event = SubAgentStarted(instance_id=inst.id, child_id=child.id, definition=uri, call_id=call_id, prompt=prompt)
    parent._emit_any(event)
    parent._drive_child(run)
    return run


def _definition_file(caps: Any, uri: str, workdir: Path | None) -> Any:
    """The definition at `uri`, read only from under the read roots after links are followed."""
    from onellm.definitions import Definition

    text = uri[7:] if uri.startswith("file://") else uri
    real = caps.resolve_read(text, base=workdir)
    if real.is_dir():
        for candidate in ("agent.yaml", "flow.yaml"):
            if (real / candidate).exists():
                real = caps.resolve_read(real / candidate)
                break
        else:
            raise BadDefinitionError("the folder holds no agent.yaml", file=uri)
    elif not real.exists():
        raise BadDefinitionError(
            "no such definition: give a name the host registered or a definition file under your read roots", file=uri
        )
    return Definition.load(real)


# --------------------------------------------------------------------------------------------- subtree cost


async def subtree_cost(runtime: Any, instance: Instance, own: Cost, warnings: list[CallWarning] | None = None) -> Cost:
    """`own` (the instance's cost) with that of every instance below it (following `spawnerInstanceId`).

    With `warnings`, an instance below whose file cannot be read is left out with a warning saying so, instead of
    raising: the run it is counted for has finished and is saved either way.
    """
    if instance.id is None or not _started_any(instance):
        return own
    try:
        summaries = await runtime.store.list()
    except Exception:
        return own
    below = _descendants(instance.id, {s.id: s.spawner_instance_id for s in summaries})
    if not below:
        return own
    from onellm.agents._result import instance_cost

    hub = getattr(runtime, "_agent_hub", None)
    loaded: list[Instance] = []
    for child_id in sorted(below):
        live = hub.live.get(child_id) if hub is not None else None
        try:
            child = live.instance if live is not None else await runtime.store.load(child_id)
        except OnellmError as exc:
            if warnings is None:
                raise
            warnings.append(
                CallWarning(
                    kind="subtree_cost",
                    message=f"instance {child_id}, started below {instance.id}, cannot be read, so its cost is left "
                    f"out of the subtree cost: {exc}",
                )
            )
            continue
        if child is not None:
            loaded.append(child)
    # A compaction's summarizer is counted in its instance's `compactions` cost already.
    counted = {c.extra.get("instanceId") for i in (instance, *loaded) for c in i.compactions}
    total = own.total
    lines = list(own.lines)
    for child in loaded:
        if child.id in counted:
            continue
        cost = instance_cost(child)
        total += cost.total
        lines.extend(cost.lines)
    return Cost(lines=tuple(lines), total=total)


def _started_any(instance: Instance) -> bool:
    for message in instance.messages:
        for call in message.tool_calls:
            if call.tool == "run_agent_async" or call.tool.endswith("run-agent-async"):
                return True
    return any(c.strategy == "compact" for c in instance.compactions)


def _descendants(root: str, spawners: Mapping[str, str | None]) -> set[str]:
    children: dict[str, list[str]] = {}
    for child, spawner in spawners.items():
        if spawner is not None:
            children.setdefault(spawner, []).append(child)
    found: set[str] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != root:
                found.add(child)
                todo.append(child)
    return found


# ---------------------------------------------------------------------------------------------- helpers


def _at_rest(run: AgentRun[Any]) -> bool:
    return not run._active and not run._runnable()


def _deadline(value: Any) -> float | None:
    if value is None:
        return None
    return anyio.current_time() + parse_duration(value, "timeout")


def _window(run: AgentRun[Any]) -> int | None:
    model = run._model
    if model is None:
        try:
            model, _ = run._services.route(run.instance.model or "")
        except Exception:
            return None
    window = model.entry.context_window
    return window if isinstance(window, int) and window > 0 else None


def _money(value: Decimal) -> str:
    return format(value.normalize() if value else _ZERO, "f")


def _plain(value: Any) -> Any:
    from onellm.messages import plain_data

    return plain_data(value)


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + f"... [{len(text) - _TEXT_LIMIT} more characters]"


def _searchable(message: Any) -> str:
    import json

    pieces: list[str] = []
    if message.user_text:
        pieces.append(f"user: {message.user_text}")
    if message.text:
        pieces.append(f"assistant: {message.text}")
    for call in message.tool_calls:
        try:
            shown = json.dumps(call.inputs, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            shown = str(call.inputs)
        pieces.append(f"tool call {call.tool} {shown}")
        if call.result:
            pieces.append("result: " + "".join(p.text for p in call.result if isinstance(p, TextPart)))
    return "\n".join(pieces)
