from __future__ import annotations

from decimal import Decimal

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm import Runtime
from onellm.errors import BudgetExceededError
from onellm.instances import MemoryInstanceStore
from onellm.messages import Usage
from onellm.testing import Pause, ScriptedProvider, ScriptedToolCall, ScriptStep

pieces = st.lists(st.text(min_size=1, max_size=12), max_size=5)
calls = st.lists(
    st.tuples(
        st.sampled_from(["get_docket", "search", "task_complete"]),
        st.dictionaries(st.sampled_from(["a", "b", "caseNo"]), st.integers(-5, 5) | st.text(max_size=5), max_size=3),
    ),
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=pieces, calls=calls, tokens=st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)))
def test_whole_and_streamed_calls_give_equal_results(
    pieces: list[str], calls: list[tuple[str, dict[str, object]]], tokens: tuple[int, int]
) -> None:
    tool_calls = tuple(ScriptedToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls))
    step = ScriptStep(
        pieces=tuple(pieces), tool_calls=tool_calls, usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1])
    )

    async def run() -> None:
        provider = ScriptedProvider("openai").enqueue(step, step)
        runtime = Runtime(store=MemoryInstanceStore(), environ={})
        runtime.providers.set("openai", provider)
        whole = await runtime.generate("gpt-6-luna", "x")
        streamed = await runtime.stream("gpt-6-luna", "x").result()
        assert whole.text == streamed.text == "".join(pieces)
        assert whole.message.assistant == streamed.message.assistant
        assert whole.message.tool_calls == streamed.message.tool_calls
        assert whole.cost == streamed.cost
        assert whole.finish == streamed.finish
        assert whole.cost.total == Decimal(tokens[0]) / 10**6 * Decimal("0.1") + Decimal(tokens[1]) / 10**6 * Decimal(
            "0.5"
        )

    anyio.run(run)


@pytest.mark.anyio
@pytest.mark.parametrize("callers", [3, 10])
async def test_concurrent_calls_never_hold_more_than_the_cap(callers: int) -> None:
    gate = anyio.Event()
    provider = ScriptedProvider("openai")
    runtime = Runtime(store=MemoryInstanceStore(), environ={}, spend_cap="0.0012")
    runtime.providers.set("openai", provider)
    step = ScriptStep(pieces=("ok", Pause(event=gate)), usage=Usage(input_tokens=10, output_tokens=10))
    provider.enqueue(step, step)  # a third call sent would find no answer and fail the test
    outcomes: list[str] = []

    async def one() -> None:
        try:
            outcomes.append(await runtime.ask("gpt-6-luna", "x", max_output_tokens=1000))
        except BudgetExceededError:
            outcomes.append("refused")

    async with anyio.create_task_group() as tg:
        for _ in range(callers):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()
        gate.set()
    # each worst case is about 0.0005: two fit under 0.0012 at once, never three
    assert outcomes.count("ok") == 2
    assert outcomes.count("refused") == callers - 2
    assert len(provider.requests) == 2
    assert runtime.spent == 2 * (Decimal("0.000001") + Decimal("0.000005"))
    provider.assert_complete()
