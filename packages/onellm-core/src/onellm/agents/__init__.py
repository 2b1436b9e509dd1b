"""Agents: a definition run as an instance with tools, in a loop that calls the model, runs the tools it asks for and
saves every turn; held calls wait for a person's approval in the instance file, across restarts; messages steer a
running agent; hooks watch and change each step. See `docs/agents.md`.

<!-- skip: next "an outline; docs/agents.md runs whole agents" -->

```python
result = await onellm.run_agent("agents/clerk.yaml", {"caseNo": "24-1234"})
run = await onellm.start_agent("agents/deploy.yaml", prompt="Ship it.")
async for event in run.events():
    if isinstance(event, ApprovalNeeded):
        await run.approve(event.call_id)
```
"""

from onellm.agents._events import (
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
from onellm.agents._hooks import (
    HOOK_POINTS,
    HOOK_SOURCE_GROUP,
    AfterInference,
    AfterToolCall,
    BeforeCompaction,
    BeforeInference,
    BeforeToolCall,
    Block,
    Continue,
    Decision,
    DefinitionHook,
    Hook,
    Hooks,
    HookSource,
    ModifyInputs,
    ModifyMessage,
    ModifyRequest,
    ModifyResult,
    OnCost,
    OnMessage,
    OnStateChange,
    OnStreamEvent,
    RequireApproval,
    Respond,
)
from onellm.agents._registry import AgentDefinitions, AgentEvents, AgentEventStream
from onellm.agents._result import AgentResult, StopReason
from onellm.agents._run import AgentRun, SyncAgentRun
from onellm.agents._setup import DEFAULT_MAX_ITERATIONS, GrantsMissingError
from onellm.agents._verbs import (
    duplicate_instance,
    fork_instance,
    load_agent_run,
    run_agent,
    run_agent_sync,
    start_agent,
    start_agent_run,
    start_agent_sync,
)

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "HOOK_POINTS",
    "HOOK_SOURCE_GROUP",
    "AfterInference",
    "AfterToolCall",
    "AgentDefinitions",
    "AgentEvent",
    "AgentEventStream",
    "AgentEvents",
    "AgentResult",
    "AgentRun",
    "ApprovalNeeded",
    "BeforeCompaction",
    "BeforeInference",
    "BeforeToolCall",
    "Block",
    "ContextCompacted",
    "Continue",
    "CostIncurred",
    "Decision",
    "DefinitionHook",
    "GrantsMissingError",
    "Hook",
    "HookSource",
    "Hooks",
    "MessageDelivered",
    "ModifyInputs",
    "ModifyMessage",
    "ModifyRequest",
    "ModifyResult",
    "MonitorFired",
    "OnCost",
    "OnMessage",
    "OnStateChange",
    "OnStreamEvent",
    "QuestionAsked",
    "RequireApproval",
    "Respond",
    "StateChanged",
    "StopReason",
    "SubAgentStarted",
    "SyncAgentRun",
    "ToolCallEnded",
    "ToolCallStarted",
    "TurnEnded",
    "TurnStarted",
    "duplicate_instance",
    "fork_instance",
    "load_agent_run",
    "run_agent",
    "run_agent_sync",
    "start_agent",
    "start_agent_run",
    "start_agent_sync",
]
