"""A run of the same definition object keeps the setup (tools checked against the grants, request settings) an earlier
run built, and builds it again whenever anything it was made from changed: the definition, the registered tools, a
tool's own description, the grants, `capabilities=` and the options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import onellm
from onellm.definitions import Definition, Reference
from onellm.errors import BadDefinitionError
from onellm.instances import MemoryInstanceStore
from onellm.testing import ScriptedProvider

from .conftest import calls, say

pytestmark = pytest.mark.anyio

AGENT = """\
name: kept
model: claude-sonnet
references:
  - tools: [echo, task_complete]
initialPrompts:
  - user:
      - text: go
"""


@onellm.tool
async def echo(text: str) -> str:
    """Says it back.

    Args:
        text: What to say.
    """
    return text


@onellm.tool
async def shout(text: str) -> str:
    """Says it louder.

    Args:
        text: What to say.
    """
    return text.upper()


@onellm.tool(required_grants=["network"])
async def fetch(url: str) -> str:
    """Fetches a page.

    Args:
        url: The page.
    """
    return url


def _runtime(caps: onellm.Capabilities | None = None) -> tuple[onellm.Runtime, ScriptedProvider]:
    runtime = onellm.Runtime(store=MemoryInstanceStore(), capabilities=caps or onellm.Capabilities.none(), environ={})
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    runtime.tools.add(echo, shout, fetch)
    return runtime, provider


async def _sent_tools(
    runtime: onellm.Runtime, provider: ScriptedProvider, definition: Any, **options: Any
) -> list[str]:
    """The tool names the model was offered by one run of `definition`."""
    provider.enqueue(say("ok"))
    await runtime.run_agent(definition, **options)
    return [t.name for t in provider.requests[-1].tools or []]


async def test_the_same_definition_keeps_its_setup() -> None:
    runtime, _ = _runtime()
    definition = Definition.loads(AGENT, file="kept.yaml")
    first = await runtime.start_agent(definition)
    second = await runtime.start_agent(definition)
    assert second._setup is first._setup
    # an equal definition read again is another object: its setup is its own
    other = await runtime.start_agent(Definition.loads(AGENT, file="kept.yaml"))
    assert other._setup is not first._setup


async def test_a_changed_definition_is_set_up_again() -> None:
    runtime, provider = _runtime()
    definition = Definition.loads(AGENT, file="kept.yaml")
    assert await _sent_tools(runtime, provider, definition) == ["echo", "task_complete"]
    assert definition.references is not None
    definition.references[0].tools = ["shout", "task_complete"]
    assert await _sent_tools(runtime, provider, definition) == ["shout", "task_complete"]
    definition.references.append(Reference(tools=["echo"]))
    assert await _sent_tools(runtime, provider, definition) == ["shout", "task_complete", "echo"]
    definition.max_tokens = 77
    provider.enqueue(say("ok"))
    await runtime.run_agent(definition)
    assert provider.requests[-1].max_output_tokens == 77
    definition.extra["outputSchema"] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    typed = await runtime.start_agent(definition)
    assert (await runtime.start_agent(definition))._setup is typed._setup
    definition.extra["outputSchema"]["properties"]["m"] = {"type": "string"}  # changed in place
    assert (await runtime.start_agent(definition))._setup is not typed._setup


async def test_changed_tools_are_set_up_again() -> None:
    runtime, provider = _runtime()
    definition = Definition.loads(AGENT, file="kept.yaml")
    await _sent_tools(runtime, provider, definition)

    @onellm.tool(name="echo")
    async def echo_again(text: str) -> str:
        """Says it back, again.

        Args:
            text: What to say.
        """
        return text

    runtime.tools.add(echo_again, replace=True)
    await _sent_tools(runtime, provider, definition)
    assert provider.requests[-1].tools is not None
    assert provider.requests[-1].tools[0].description == "Says it back, again."
    # a tool changed in place
    echo_again.description = "Changed."
    await _sent_tools(runtime, provider, definition)
    assert provider.requests[-1].tools[0].description == "Changed."
    # a group added under a name the definition uses as a tool name
    runtime.tools.add_group("echoes", ["echo", "shout"])
    assert definition.references is not None
    definition.references[0].tools = ["echoes"]
    assert await _sent_tools(runtime, provider, definition) == ["echo", "shout"]


async def test_other_grants_are_set_up_again(tmp_path: Path) -> None:
    runtime, provider = _runtime()
    definition = Definition.loads(AGENT.replace("[echo, task_complete]", "[echo, fetch, task_complete]"), file="k.yaml")
    with pytest.raises(BadDefinitionError, match="fetch"):
        await runtime.start_agent(definition)
    lenient = await _sent_tools(runtime, provider, definition, strict=False)
    assert lenient == ["echo", "task_complete"]
    runtime.capabilities = onellm.Capabilities.network("example.com")
    assert await _sent_tools(runtime, provider, definition) == ["echo", "fetch", "task_complete"]
    # capabilities= narrows the grants of one run: a setup made under wider grants is not used for it
    with pytest.raises(BadDefinitionError, match="fetch"):
        await runtime.start_agent(definition, capabilities=onellm.Capabilities.files(tmp_path))
    narrowed = await _sent_tools(
        runtime, provider, definition, strict=False, capabilities=onellm.Capabilities.files(tmp_path)
    )
    assert narrowed == ["echo", "task_complete"]
    assert await _sent_tools(runtime, provider, definition) == ["echo", "fetch", "task_complete"]


async def test_other_options_are_set_up_again() -> None:
    runtime, _ = _runtime()
    definition = Definition.loads(AGENT, file="kept.yaml")
    first = (await runtime.start_agent(definition))._setup
    limited = (await runtime.start_agent(definition, max_iterations=3))._setup
    typed = (await runtime.start_agent(definition, output=int))._setup
    again = (await runtime.start_agent(definition))._setup
    assert first is not None
    assert limited is not None
    assert typed is not None
    assert again is not None
    assert limited.max_iterations == 3
    assert typed.output is int
    assert again.max_iterations == first.max_iterations
    assert again.output is None


async def test_a_definition_read_from_a_file_keeps_nothing(tmp_path: Path) -> None:
    # read afresh on every run: a setup kept for it would never be used, only hold the definition
    runtime, provider = _runtime()
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT, encoding="utf-8")
    assert await _sent_tools(runtime, provider, path) == ["echo", "task_complete"]
    assert await _sent_tools(runtime, provider, str(path)) == ["echo", "task_complete"]
    assert runtime.tools._derived == {}


async def test_a_hook_editing_the_offered_tools_changes_only_its_own_request() -> None:
    runtime, provider = _runtime()
    definition = Definition.loads(AGENT, file="kept.yaml")
    seen: list[list[str]] = []

    @runtime.hooks.before_inference
    def drop_echo(ctx: onellm.agents.BeforeInference) -> None:
        seen.append([t.name for t in ctx.request.tools])
        ctx.request.tools[:] = [t for t in ctx.request.tools if t.name != "echo"]

    provider.enqueue(calls(("c1", "echo", {"text": "hi"})), say("ok"))
    await runtime.run_agent(definition)
    assert await _sent_tools(runtime, provider, definition) == ["task_complete"]
    # every turn and the second run were offered the definition's tools before the hook took one away
    assert seen == [["echo", "task_complete"]] * 3
    assert [[t.name for t in r.tools] for r in provider.requests] == [["task_complete"]] * 3
