"""The accumulator a provider builds a whole answer in: the caller's while it collects (`collecting_into`), one made
only when asked for (`collecting_lazily`), else a fresh one; and the response of a message built whole."""

from __future__ import annotations

from onellm.messages import Done, MessageAccumulator, MessageStart, TextDelta, Usage, UsageEvent
from onellm.providers import (
    FinishReason,
    collecting_into,
    collecting_lazily,
    response_from,
    whole_answer_accumulator,
    whole_response,
)


def test_outside_a_collecting_block_each_answer_gets_its_own_accumulator() -> None:
    assert whole_answer_accumulator() is not whole_answer_accumulator()


def test_collecting_into_hands_over_the_callers_accumulator_once() -> None:
    mine = MessageAccumulator()
    with collecting_into(mine) as given:
        assert given is mine
        assert whole_answer_accumulator() is mine
        assert whole_answer_accumulator() is not mine  # a nested answer builds its own
    assert whole_answer_accumulator() is not mine


def test_collecting_lazily_makes_the_accumulator_only_when_a_provider_asks() -> None:
    with collecting_lazily() as collected:
        assert collected.accumulator is None
    with collecting_lazily() as collected:
        made = whole_answer_accumulator()
        assert collected.accumulator is made
        assert whole_answer_accumulator() is not made
    assert collected.accumulator is made
    with collecting_lazily() as outer:
        with collecting_lazily() as inner:
            assert whole_answer_accumulator() is inner.accumulator
        assert outer.accumulator is None
        assert whole_answer_accumulator() is outer.accumulator


def test_a_message_built_whole_makes_the_response_its_events_make() -> None:
    accumulator = MessageAccumulator()
    for event in (
        MessageStart(model="m", response_id="r1"),
        TextDelta(0, "Hi"),
        UsageEvent(Usage(input_tokens=3)),
        Done("end_turn"),
    ):
        accumulator.add(event)
    built = response_from(accumulator, [])
    whole = whole_response(accumulator.message(), "end_turn", "m", "r1")
    assert whole == built
    assert whole.usage is whole.message.usage
    assert whole.finish_reason is FinishReason.OTHER
    assert whole_response(accumulator.message(), None, None, None).finish_reason is None
