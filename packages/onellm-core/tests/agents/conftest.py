"""Agents on the scripted provider: a runtime with `claude-sonnet` scripted, the records it writes, and helpers to
write definitions and script tool-calling answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

import onellm
from onellm.errors import RunCancelledError
from onellm.instances import FileInstanceStore, MemoryInstanceStore
from onellm.messages import Usage
from onellm.records import EventRecordSink, Record
from onellm.testing import ScriptedProvider, ScriptedToolCall, ScriptStep


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def calls(
    *items: tuple[str, str, dict[str, Any] | str], usage: tuple[int, int] | None = None, text: str | None = None
) -> ScriptStep:
    """A scripted answer calling tools: (id, tool, arguments) each."""
    return ScriptStep(
        pieces=(text,) if text else (),
        tool_calls=tuple(ScriptedToolCall(i, t, a) for i, t, a in items),
        usage=Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None,
    )


def say(text: str, usage: tuple[int, int] | None = None) -> ScriptStep:
    if usage is None:
        return ScriptStep.text(text)
    return ScriptStep.text_with_usage(text, *usage)


def done(result: str = "done", summary: str = "did it", call_id: str = "tc") -> ScriptStep:
    return calls((call_id, "task_complete", {"result": result, "summary": summary}))


@dataclass
class Harness:
    runtime: onellm.Runtime
    provider: ScriptedProvider
    folder: Path
    records: list[Record] = field(default_factory=list)
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def write(self, name: str, text: str) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def agent(self, tools: str = "[echo, task_complete]", extra: str = "", prompt: str | None = "Do the task.") -> Path:
        body = f"name: helper\nmodel: claude-sonnet\nsystemPrompt: You help.\nreferences:\n  - tools: {tools}\n"
        if prompt is not None:
            body += f"initialPrompts:\n  - user:\n      - text: {prompt}\n"
        return self.write("agent.yaml", body + extra)

    def kinds(self, kind: str) -> list[Any]:
        return [r for r in self.records if r.kind == kind]

    def script(self, *steps: ScriptStep) -> None:
        self.provider.enqueue(*steps)


def make_runtime(
    folder: Path, store: Any, ran: list[tuple[str, dict[str, Any]]], records: list[Record]
) -> tuple[onellm.Runtime, ScriptedProvider]:
    runtime = onellm.Runtime(
        store=store,
        records=[EventRecordSink(records.append)],
        capabilities=onellm.Capabilities.files(folder),
        environ={},
    )
    provider = ScriptedProvider("anthropic")
    runtime.providers.set("anthropic", provider)
    for fn in tool_functions(ran):
        runtime.tools.add(fn)
    return runtime, provider


def tool_functions(ran: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    import anyio

    @onellm.tool
    def echo(text: str) -> str:
        """Says the text back.

        Args:
            text: What to say.
        """
        ran.append(("echo", {"text": text}))
        return f"echo: {text}"

    @onellm.tool(parallel_safe=False)
    def write_note(text: str) -> str:
        """Writes a note (one at a time).

        Args:
            text: The note.
        """
        ran.append(("write_note", {"text": text}))
        return "noted"

    @onellm.tool(requires_approval=True)
    def deploy(target: str) -> str:
        """Deploys to a target.

        Args:
            target: Where.
        """
        ran.append(("deploy", {"target": target}))
        return f"deployed to {target}"

    @onellm.tool
    def explode(reason: str) -> str:
        """Always fails.

        Args:
            reason: Why.
        """
        ran.append(("explode", {"reason": reason}))
        raise RuntimeError(reason)

    @onellm.tool(timeout_seconds=0.05)
    async def hang() -> str:
        """Never returns."""
        ran.append(("hang", {}))
        await anyio.sleep_forever()
        return "never"

    @onellm.tool
    async def wait_then(seconds: float, text: str) -> str:
        """Sleeps, then answers.

        Args:
            seconds: How long.
            text: What to say.
        """
        await anyio.sleep(seconds)
        ran.append(("wait_then", {"text": text}))
        return text

    return [echo, write_note, deploy, explode, hang, wait_then]


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    ran: list[tuple[str, dict[str, Any]]] = []
    records: list[Record] = []
    runtime, provider = make_runtime(tmp_path, MemoryInstanceStore(), ran, records)
    return Harness(runtime, provider, tmp_path, records, ran)


@pytest.fixture
def file_harness(tmp_path: Path) -> Harness:
    ran: list[tuple[str, dict[str, Any]]] = []
    records: list[Record] = []
    store = FileInstanceStore(tmp_path / "instances", durable=False)
    runtime, provider = make_runtime(tmp_path, store, ran, records)
    return Harness(runtime, provider, tmp_path, records, ran)


Maker = Callable[..., Harness]


def add_quick_and_slow(runtime: onellm.Runtime) -> anyio.Event:
    """Register `quick` (answers at once) and `slow` (answers after 30 s); the event is set when `quick` has run."""
    finished = anyio.Event()

    @onellm.tool
    async def quick() -> str:
        """Answers at once."""
        finished.set()
        return "quick"

    @onellm.tool
    async def slow() -> str:
        """Answers much later."""
        await anyio.sleep(30)
        return "late"

    runtime.tools.add(quick, slow)
    return finished


async def cancel_once_finished(run: Any, finished: anyio.Event) -> None:
    """Wait for `run`'s result, cancelling the run once `finished` is set: the result raises `RunCancelledError`."""

    async def cancel_when_one_finished() -> None:
        await finished.wait()
        await run.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_when_one_finished)
        with pytest.raises(RunCancelledError):
            await run.result()
