"""The getting-started tour: every call of the getting-started page, run with no API key.

    uv run python -m onellm.tour            # scripted answers, no key, no spend
    uv run python -m onellm.tour --live     # the same calls against the real services (keys from the environment)

Without `--live`, `onellm.testing.ScriptedProvider` is registered under the real provider names (`anthropic`,
`openai`), and `ScriptedDecisionProvider` under `typesafe` for the decider, so model names resolve through the
shipped catalog and each call is priced as a real one would be; each step queues the answer the scripted model gives
(the decider gets the scripted engine's placeholder answers). Instances are saved as YAML files in a fresh temporary directory
(or in `--instances DIR`), and the tour prints where.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import anyio

import onellm
from onellm.instances import FileInstanceStore
from onellm.messages import Usage
from onellm.testing import ScriptedDecisionProvider, ScriptedProvider, ScriptedToolCall, ScriptStep

__all__ = ["COMMIT_MESSAGE_FLOW", "Invoice", "Tour", "get_docket", "main"]

COMMIT_MESSAGE_FLOW = """\
model: gpt-6-luna
systemPrompt: You write git commit messages.
initialPrompts:
  - user:
      - text: "Summarize this change in one sentence: {{ .inputs.diff }}"
  - user:
      - text: "Now write the commit message from your summary: {{ (index .turns 0).text }}"
"""

_CLERK_AGENT = """\
name: clerk
model: claude-sonnet
systemPrompt: You look up court dockets. Call task_complete with your answer.
inputs:
  caseNo: ""
initialPrompts:
  - user:
      - text: "Find docket {{ .inputs.caseNo }} and report its status."
references:
  - tools: [get_docket, task_complete]
"""


@onellm.tool
def get_docket(caseNo: str) -> str:
    """Looks up a docket entry.

    Args:
        caseNo: Case number, for example 24-1234.
    """
    return "Docket " + caseNo + ": open"


_TRIAGE_DECIDER = """\
model: jev-latest
state:
  title: "{{ .inputs.title }}"
questions:
  topic:
    type: choice
    instructions: Which team should handle the ticket?
    criteria:
      billing: Charges and refunds
      orders: Delivery and returns
  angry:
    type: noul
    instructions: Is the customer angry?
"""


@dataclass
class Invoice:
    customer: str
    total: Decimal


class Tour:
    def __init__(self, directory: Path, *, live: bool) -> None:
        self.directory = directory
        self.live = live
        self.store = FileInstanceStore(directory / "instances", durable=False)
        self.runtime = onellm.Runtime(store=self.store)
        self.runtime.tools.add(get_docket)
        self.anthropic = ScriptedProvider("anthropic")
        self.openai = ScriptedProvider("openai")
        if not live:
            self.runtime.providers.set("anthropic", self.anthropic)
            self.runtime.providers.set("openai", self.openai)
            self.runtime.providers.set("typesafe", ScriptedDecisionProvider("typesafe"))
        self.saved: list[tuple[str, str | None]] = []

    def script(self, provider: ScriptedProvider, *steps: ScriptStep) -> None:
        """Queue the scripted model's answers (nothing to do against the real services)."""
        if not self.live:
            provider.enqueue(*steps)

    def saved_as(self, what: str, instance: onellm.Instance | str | None) -> None:
        self.saved.append((what, instance if isinstance(instance, str) or instance is None else instance.id))

    async def run(self) -> None:
        with onellm.use_runtime(self.runtime):
            await self.first_call()
            await self.structured_output()
            await self.streaming()
            await self.a_script()
            await self.an_agent()
            await self.a_decider()
        print()
        print(f"Instances saved in {self.store.directory}:")
        for what, instance_id in self.saved:
            path = self.store.path_of(instance_id) if instance_id else None
            print(f"  {what}: {path}")
        if not self.live:
            self.anthropic.assert_complete()
            self.openai.assert_complete()

    async def first_call(self) -> None:
        print("## A first call")
        self.script(
            self.anthropic,
            ScriptStep.text_with_usage("A monad is a type that wraps a value and chains computations on it.", 14, 15),
        )
        answer = await onellm.ask("claude-sonnet", "In one sentence, what is a monad?")
        print(answer)
        self.saved_as("ask", await self.latest())

        self.script(self.openai, ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
        r = await onellm.generate("gpt-6-luna", "Name three prime numbers.")
        usage = r.usage
        print(
            f"{r.text} [{usage.input_tokens if usage else None} in, {usage.output_tokens if usage else None} out, {r.cost.total}]"
        )
        for line in r.cost.lines:
            print(f"  {line.counter}: {line.quantity} x {line.unit_price} per {line.per} = {line.amount}")
        self.saved_as("generate", r.instance)

    async def structured_output(self) -> None:
        print()
        print("## Structured output")
        self.script(self.openai, ScriptStep.text_with_usage('{"customer":"ACME Ltd","total":120.50}', 60, 12))
        invoice = await onellm.ask("gpt-6-luna", "ACME Ltd billed 120.50 for consulting.", output=Invoice)
        print(invoice)
        self.saved_as("structured output", await self.latest())

    async def streaming(self) -> None:
        print()
        print("## Streaming")
        self.script(
            self.anthropic,
            ScriptStep.text(
                "Green lights at midnight, ", "the queue drains one job at a time, ", "dawn finds the build red."
            ),
        )
        stream = onellm.stream("claude-haiku", "Write a haiku about build servers.")
        async with stream:
            async for piece in stream.text():
                print(piece, end="", flush=True)
            done = await stream.result()
        print()
        expected = "Green lights at midnight, the queue drains one job at a time, dawn finds the build red."
        print(f"result text matches: {done.text == expected}")
        self.saved_as("stream", done.instance)

    async def a_script(self) -> None:
        print()
        print("## A script")
        flow = self.directory / "prompts" / "commit-message.flow"
        flow.parent.mkdir(parents=True, exist_ok=True)
        flow.write_text(COMMIT_MESSAGE_FLOW, encoding="utf-8")
        diff = "- retries = 1\n+ retries = 3"
        self.script(
            self.openai,
            ScriptStep.text_with_usage("Raises the retry count from 1 to 3.", 40, 10),
            ScriptStep.text_with_usage(
                "Raise retries from 1 to 3\n\nTransient failures now get two more attempts.", 70, 16
            ),
        )
        script = await onellm.run_script(flow, {"diff": diff})
        print(script.text)
        print(f"calls: {len(script.turns)}, cost: {script.cost.total}")
        self.saved_as("script", script.instance)

    async def an_agent(self) -> None:
        print()
        print("## An agent with a Python tool")
        clerk = self.directory / "agents" / "clerk.yaml"
        clerk.parent.mkdir(parents=True, exist_ok=True)
        clerk.write_text(_CLERK_AGENT, encoding="utf-8")
        self.script(
            self.anthropic,
            ScriptStep(
                tool_calls=(ScriptedToolCall("c1", "get_docket", '{"caseNo":"24-1234"}'),),
                usage=Usage(input_tokens=300, output_tokens=20),
            ),
            ScriptStep(
                tool_calls=(
                    ScriptedToolCall(
                        "c2",
                        "task_complete",
                        '{"result":"Docket 24-1234 is open.","summary":"Looked up the docket."}',
                    ),
                ),
                usage=Usage(input_tokens=340, output_tokens=25),
            ),
        )
        agent = await onellm.run_agent(clerk, {"caseNo": "24-1234"})
        reason = agent.stop_reason.name.title().replace("_", "")
        print(f"{reason}: {agent.text} ({agent.cost.total})")
        self.saved_as("agent", agent.instance)

    async def a_decider(self) -> None:
        print()
        print("## A decider")
        folder = self.directory / "deciders" / "triage-ticket"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "decider.yaml").write_text(_TRIAGE_DECIDER, encoding="utf-8")
        verdict = await onellm.decide(folder, {"title": "Refund please"})
        print(json.dumps(verdict.answers, separators=(",", ":")))
        self.saved_as("decider", verdict.instance)

    async def latest(self) -> str:
        """The id of the instance saved last (`ask` returns only the text)."""
        summaries = await self.store.list()
        return max(summaries, key=lambda s: s.modified_at).id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m onellm.tour", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--live", action="store_true", help="call the real services (keys from the environment)")
    parser.add_argument(
        "--instances", type=Path, help="keep the instances in this directory (default: a temporary one)"
    )
    args = parser.parse_args(argv)
    try:
        if args.instances is not None:
            args.instances.mkdir(parents=True, exist_ok=True)
            anyio.run(Tour(args.instances, live=args.live).run)
            return 0
        with tempfile.TemporaryDirectory(prefix="onellm-tour-") as folder:
            anyio.run(Tour(Path(folder), live=args.live).run)
    except onellm.AuthError as error:
        print(f"\n{type(error).__name__}: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
