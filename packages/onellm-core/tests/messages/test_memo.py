"""A message's memo keeps what was made from it only while the message is unchanged."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from onellm.instances import Instance
from onellm.messages import Message, TextPart, ToolCall, Usage
from onellm.messages.memo import MEMO, memo_of


def message() -> Message:
    return Message(
        id="m1",
        user=[TextPart("question")],
        assistant=[TextPart("answer")],
        tool_calls=[ToolCall(id="c", tool="t", inputs={"a": [1, {"b": "c"}]}, result=[TextPart("r")])],
        usage=Usage(input_tokens=3, cost=Decimal("0.001")),
        date_time="2026-12-01T10:00:00Z",
        extra={"x": {"y": 1}, "w": 0},
    )


def test_an_unchanged_message_keeps_its_memo() -> None:
    msg = message()
    memo = memo_of(msg)
    assert memo is not None
    memo.put("k", "made")
    again = memo_of(msg)
    assert again is memo
    assert again.get("k") == "made"


CHANGES = {
    "text": lambda m: setattr(m.assistant[0], "text", "other"),
    "new part": lambda m: m.user.append(TextPart("more")),
    "nested input": lambda m: m.tool_calls[0].inputs["a"][1].__setitem__("b", "d"),
    "result": lambda m: setattr(m.tool_calls[0], "result", None),
    "usage": lambda m: setattr(m.usage, "input_tokens", 4),
    "extra": lambda m: m.extra["x"].__setitem__("y", 2),
    "time": lambda m: setattr(m, "date_time", "2026-12-01T10:00:01Z"),
    "cache": lambda m: setattr(m, "cache", True),
    # equal by Python's ==, written differently
    "int to bool": lambda m: m.tool_calls[0].inputs["a"].__setitem__(0, True),
    "int to float": lambda m: m.tool_calls[0].inputs["a"].__setitem__(0, 1.0),
    "decimal digits": lambda m: setattr(m.usage, "cost", Decimal("0.0010")),
    "key order": lambda m: setattr(m, "extra", {"w": 0, "x": m.extra["x"]}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_any_change_in_place_empties_the_memo(change: str) -> None:
    msg = message()
    memo = memo_of(msg)
    assert memo is not None
    memo.put("k", "made")
    CHANGES[change](msg)
    fresh = memo_of(msg)
    assert fresh is not None
    assert fresh.get("k") is None


def test_an_equal_replacement_keeps_the_memo() -> None:
    """What was made depends on the message's value only: a part replaced by an equal one changes nothing made."""
    msg = message()
    memo = memo_of(msg)
    assert memo is not None
    memo.put("k", "made")
    msg.user[0] = TextPart("".join(["ques", "tion"]))
    found = memo_of(msg)
    assert found is not None
    assert found.get("k") == "made"


def test_a_bytearray_changed_in_place_is_seen() -> None:
    msg = Message(user=[TextPart("x")], extra={"blob": bytearray(b"abc")})
    memo = memo_of(msg)
    assert memo is not None
    memo.put("k", "made")
    msg.extra["blob"][0] = 0
    fresh = memo_of(msg)
    assert fresh is not None
    assert fresh.get("k") is None


def test_a_message_holding_an_unknown_object_has_no_memo() -> None:
    class Opaque:
        pass

    msg = Message(user=[TextPart("x")], extra={"thing": Opaque()})
    assert memo_of(msg) is None
    assert MEMO not in msg.__dict__


def test_copies_start_without_a_memo() -> None:
    msg = message()
    assert memo_of(msg) is not None
    for other in (copy.copy(msg), copy.deepcopy(msg)):
        assert MEMO not in other.__dict__
        assert other == msg
    # A message read from data keeps its key layout in the same dict: a copy carries the layout, not the memo.
    read = Message.from_data({"x-first": 1, "id": "m", "user": [{"text": "x"}]})
    assert memo_of(read) is not None
    for other in (copy.copy(read), copy.deepcopy(read)):
        assert MEMO not in other.__dict__
        assert list(other.to_data()) == ["x-first", "id", "user"]


class Counting:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = Message.to_data

        def counted(msg: Message) -> dict[str, Any]:
            self.calls += 1
            return original(msg)

        monkeypatch.setattr(Message, "to_data", counted)


def test_a_new_instance_over_written_messages_writes_their_blocks_without_encoding_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A conversation started from messages another instance has written (a chat continued from a long history)
    writes each message's block once."""
    messages = [message() for _ in range(5)]
    for i, msg in enumerate(messages):
        msg.id = f"m{i}"
    text = Instance(id="a", messages=list(messages)).dumps()
    assert Instance(id="z", messages=list(messages)).dumps()  # written a second time: now kept
    counting = Counting(monkeypatch)
    second = Instance(id="b", messages=list(messages))
    assert second.dumps() == text.replace("instanceId: a", "instanceId: b")
    assert counting.calls == 0
    messages[2].assistant[0].text = "changed"
    third = Instance(id="c", messages=list(messages))
    assert "changed" in third.dumps()
    assert counting.calls == 1
    assert Instance.loads(third.dumps()) == third


def test_a_message_used_once_is_not_snapshot() -> None:
    """Most messages are written once (a single question): they only note what was asked of them."""
    msg = message()
    Instance(id="a", messages=[msg]).dumps()
    assert msg.__dict__[MEMO] == {("yaml", 0)}
    Instance(id="b", messages=[msg]).dumps()
    assert memo_of(msg) is msg.__dict__[MEMO]


def test_a_token_estimate_is_kept_while_the_message_is_unchanged() -> None:
    from onellm.catalog import Catalog
    from onellm.catalog.counting import TokenEstimator

    estimator = TokenEstimator(Catalog.default().resolve("gpt-6-luna"))
    history = [message() for _ in range(3)]
    counts = [estimator.messages(history) for _ in range(3)]  # noted, kept, taken from the memo
    assert counts[0] == counts[1] == counts[2]
    history[1].assistant[0].text = "a much longer answer than before " * 20
    assert estimator.messages(history) > counts[0]
    assert estimator.messages(history) == TokenEstimator(Catalog.default().resolve("gpt-6-luna")).messages(
        [Message.from_data(m.to_data()) for m in history]
    )


def test_a_saved_instance_shows_a_change_that_python_calls_equal() -> None:
    """A turn whose tool call has no result yet may still change in place; `1` becoming `True` is equal in Python
    but written differently, so the next save must see it."""
    msg = message()
    msg.tool_calls[0].result = None
    inst = Instance(model="m")
    inst.messages.append(msg)
    first = inst.dumps()
    assert "- 1\n" in first
    msg.tool_calls[0].inputs["a"][0] = True
    text = inst.dumps()
    assert "- true\n" in text
    assert Instance.loads(text).messages[0].tool_calls[0].inputs["a"][0] is True
    other = Instance(model="m")  # a second instance over the same message takes its block from the memo
    other.messages.append(msg)
    assert other.dumps() == text
    msg.tool_calls[0].inputs["a"][0] = 1.0
    assert "- 1.0\n" in other.dumps()


def test_a_message_holding_an_integer_beyond_64_bits_has_no_memo() -> None:
    msg = Message(user=[TextPart("x")], extra={"n": 2**70})
    assert memo_of(msg) is None
