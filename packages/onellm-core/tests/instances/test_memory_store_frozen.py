"""The memory store keeps a new instance as it is at each save and writes its text when first read: the text it gives
is the text writing at every save would have given, byte for byte, whatever happened between the saves (appends,
replaced and dropped messages, open calls completed in place, header values changed, containers edited in place);
a value the file has no form for fails the save, as writing would."""

from __future__ import annotations

import datetime
import random
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.errors import UnwritableValueError
from onellm.instances import Instance, MemoryInstanceStore, PendingApproval
from onellm.messages import CostLine, Message, TextPart, Timestamp, ToolCall, Usage

_OPS = (
    "prompt",
    "answer",
    "open_call",
    "complete",
    "replace_last",
    "reopen_last",
    "drop_last",
    "state",
    "metadata",
    "inputs",
    "temperature",
    "started",
    "extra",
    "approval",
    "read",
    "save",
    "save",
    "save",
)


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return rng.choice(["", "text", "two\nlines", "ü: #x", "- dash", "null"])
    if kind == 1:
        return rng.randrange(-5, 10**20)
    if kind == 2:
        return rng.choice([0.5, -0.0, 1e300, 3.0])
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return Decimal(rng.choice(["0.10", "1", "-2.5E+3"]))
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randrange(3))}


def _usage(rng: random.Random) -> Usage:
    return Usage(
        model="m",
        input_tokens=rng.randrange(1000),
        output_tokens=rng.randrange(100),
        cost=Decimal("0.0012"),
        cost_lines=[
            CostLine(
                counter="inputTokens",
                quantity=3,
                per=1000000,
                unit_price=Decimal("2"),
                amount=Decimal("0.000006"),
                as_of=datetime.date(2026, 11, 5),
            )
        ],
    )


class _Pair:
    """The same instance twice: one written at every save (the reference), one saved to a memory store."""

    def __init__(self, seed: int) -> None:
        self.written = Instance(id="i", name="pair", model="m", state="running")
        self.kept = Instance(id="i", name="pair", model="m", state="running")
        self.store = MemoryInstanceStore()
        self.seed = seed
        self.serial = 0

    def both(self, change: Any) -> None:
        """Apply `change(instance, rng)` to both with the same random choices."""
        self.serial += 1
        for inst in (self.written, self.kept):
            change(inst, random.Random(self.seed * 7919 + self.serial))

    def save(self) -> str:
        expected = self.written.dumps()
        self.store.save_sync(self.kept)
        return expected


def _op(name: str) -> Any:
    def prompt(inst: Instance, rng: random.Random) -> None:
        inst.messages.append(Message(id=f"u{len(inst.messages)}", user=[TextPart(f"ask {rng.randrange(99)}")]))

    def answer(inst: Instance, rng: random.Random) -> None:
        inputs = {"n": _value(rng), "more": _value(rng)}
        call = ToolCall(id=f"c{len(inst.messages)}", tool="t", inputs=inputs, result=[TextPart("ok")])
        inst.messages.append(
            Message(
                id=f"a{len(inst.messages)}",
                assistant=[TextPart("done")],
                tool_calls=[call],
                date_time=Timestamp("2026-12-07T03:00:00.1234567Z"),
                usage=_usage(rng),
                extra={"x-note": _value(rng)},
            )
        )

    def open_call(inst: Instance, rng: random.Random) -> None:
        at = len(inst.messages)
        calls = [ToolCall(id=f"o{at}-{i}", tool="t", inputs={"q": _value(rng)}) for i in range(rng.randrange(1, 3))]
        inst.messages.append(Message(id=f"o{at}", tool_calls=calls, usage=_usage(rng)))

    def complete(inst: Instance, rng: random.Random) -> None:
        # An open call answered in place (allowed for a call without its result).
        for msg in reversed(inst.messages):
            for call in msg.tool_calls:
                if call.result is None:
                    call.result = [TextPart(f"answer {rng.randrange(99)}")]
                    return

    def replace_last(inst: Instance, rng: random.Random) -> None:
        if inst.messages:
            last = inst.messages[-1]
            inst.messages[-1] = msgspec.structs.replace(last, assistant=[TextPart(f"again {rng.randrange(9)}")])

    def reopen_last(inst: Instance, rng: random.Random) -> None:
        if inst.messages:
            open_call(inst, rng)
            inst.messages[-2:] = [inst.messages[-1]]

    def drop_last(inst: Instance, rng: random.Random) -> None:
        if inst.messages:
            inst.messages.pop()

    def state(inst: Instance, rng: random.Random) -> None:
        inst.state = rng.choice(["running", "waiting", "stopped", "error"])

    def metadata(inst: Instance, rng: random.Random) -> None:
        if inst.metadata is None:
            inst.metadata = {}
        inst.metadata[f"k{rng.randrange(3)}"] = _value(rng)  # edited in place

    def inputs(inst: Instance, rng: random.Random) -> None:
        inst.inputs = {"topic": _value(rng)}

    def temperature(inst: Instance, rng: random.Random) -> None:
        inst.temperature = rng.choice([None, Decimal("0.70"), 0.7, 1])

    def started(inst: Instance, rng: random.Random) -> None:
        inst.run_started_at = rng.choice([None, Timestamp("2026-12-07T03:00:00Z")])

    def extra(inst: Instance, rng: random.Random) -> None:
        inst.extra[rng.choice(["x-one", "x-two"])] = _value(rng)

    def approval(inst: Instance, rng: random.Random) -> None:
        if inst.pending_approvals:
            inst.pending_approvals.clear()
        else:
            inst.pending_approvals.append(PendingApproval(tool_call_id="c1", tool="t", reason="check"))

    return locals()[name]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_OPS), max_size=30), st.integers(0, 10**6))
def test_the_text_read_is_the_text_every_save_would_have_written(ops: list[str], seed: int) -> None:
    pair = _Pair(seed)
    expected = pair.save()
    for name in ops:
        if name == "read":
            assert pair.store.text_of("i") == expected
        elif name == "save":
            expected = pair.save()
        else:
            pair.both(_op(name))  # changed after the save: what was saved stays as it was
    assert pair.store.text_of("i") == expected
    expected = pair.save()
    assert pair.store.text_of("i") == expected
    loaded = pair.store.load_sync("i")
    assert loaded is not None
    assert loaded.dumps() == expected


def test_a_run_kept_this_way_writes_no_text_until_read(monkeypatch: pytest.MonkeyPatch) -> None:
    emitted: list[str] = []
    real = Instance.dump_parts

    def counting(self: Instance) -> tuple[str, ...]:
        emitted.append(self.id or "")
        return real(self)

    monkeypatch.setattr(Instance, "dump_parts", counting)
    store = MemoryInstanceStore()
    inst = Instance(id="quiet", state="running")
    for i in range(5):
        _op("answer")(inst, random.Random(i))
        store.save_sync(inst)
    assert emitted == []
    text = store.text_of("quiet")
    assert emitted == ["quiet"]
    assert text == inst.dumps()
    assert store.text_of("quiet") == text  # written once
    assert len(emitted) == 2  # the second was the reference above


def test_a_save_after_a_read_looks_only_at_the_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    import onellm.instances._model as model

    looked: list[str | None] = []
    real = model._writable

    def counting(message: Message) -> bool:
        looked.append(message.id)
        return real(message)

    monkeypatch.setattr(model, "_writable", counting)
    pair = _Pair(5)
    for _ in range(4):
        pair.both(_op("answer"))
        expected = pair.save()
        assert pair.store.text_of("i") == expected  # read after every save
    assert looked == ["a0", "a1", "a2", "a3"]


def test_a_value_without_a_form_fails_the_save_and_keeps_the_last() -> None:
    store = MemoryInstanceStore()
    inst = Instance(id="bad", state="running")
    _op("answer")(inst, random.Random(1))
    store.save_sync(inst)
    before = store.text_of("bad")
    good = inst.messages[0]
    call = ToolCall(id="c9", tool="t", inputs={"when": datetime.datetime(2026, 1, 1)}, result=[TextPart("x")])
    inst.messages.append(Message(id="late", tool_calls=[call]))
    with pytest.raises(UnwritableValueError) as caught:
        store.save_sync(inst)
    assert caught.value.instance_id == "bad"
    assert caught.value.path == "messages[1].toolCalls[0].inputs.when"
    assert store.text_of("bad") == before
    # In the header too, and in a call still waiting for its result.
    inst.messages[1:] = []
    inst.inputs = {"day": datetime.date(2026, 1, 1)}
    with pytest.raises(UnwritableValueError) as caught:
        store.save_sync(inst)
    assert caught.value.path == "inputs.day"
    inst.inputs = None
    inst.messages.append(Message(id="open", tool_calls=[ToolCall(id="c8", tool="t", inputs={"s": {1, 2}})]))
    with pytest.raises(UnwritableValueError) as caught:
        store.save_sync(inst)
    assert caught.value.path == "messages[1].toolCalls[0].inputs.s"
    assert inst.messages[0] is good
    assert store.text_of("bad") == before


def test_an_open_call_completed_after_the_save_is_read_as_it_was_saved() -> None:
    store = MemoryInstanceStore()
    inst = Instance(id="open", state="waiting_for_approval")
    _op("open_call")(inst, random.Random(3))
    store.save_sync(inst)
    saved = inst.dumps()
    inst.messages[0].tool_calls[0].result = [TextPart("late answer")]
    loaded = store.load_sync("open")
    assert loaded is not None
    assert loaded.messages[0].tool_calls[0].result is None
    assert store.text_of("open") == saved


def test_an_open_prompt_completed_after_the_save_is_read_as_it_was_saved() -> None:
    # What a model call does to its turn (its answer, calls and usage assigned), and what code completing a turn may
    # append to an open message's lists and mappings: none of it reaches the save before.
    store = MemoryInstanceStore()
    inst = Instance(id="prompt", state="running")
    usage = _usage(random.Random(5))
    inst.messages.append(
        Message(
            id="p",
            user=[TextPart("look it up")],
            tool_calls=[ToolCall(id="c1", tool="t", inputs={"q": 1})],
            usage=usage,
            extra={"x-note": "kept"},
        )
    )
    store.save_sync(inst)
    saved = inst.dumps()
    turn = inst.messages[0]
    turn.user.append(TextPart("more"))
    turn.assistant = [TextPart("done")]
    turn.tool_calls[0].result = [TextPart("found")]
    turn.tool_calls[0].inputs["q"] = 2
    turn.tool_calls[0].cost_lines.append(usage.cost_lines[0])
    turn.tool_calls.append(ToolCall(id="c2", tool="t"))
    usage.cost_lines.append(usage.cost_lines[0])
    usage.counters["images"] = 3
    turn.extra["x-note"] = "changed"
    assert store.text_of("prompt") == saved
    loaded = store.load_sync("prompt")
    assert loaded is not None
    assert loaded.dumps() == saved


def test_an_instance_read_from_text_is_written_at_each_save() -> None:
    store = MemoryInstanceStore()
    inst = Instance(id="read", state="waiting")
    _op("answer")(inst, random.Random(4))
    store.save_sync(inst)
    loaded = store.load_sync("read")
    assert loaded is not None
    loaded.state = "running"
    store.save_sync(loaded)  # a loaded instance keeps the text it was read from: written now, reusing it
    assert store._items["read"].frozen is None
    assert store.text_of("read") == loaded.dumps()


@pytest.mark.parametrize(
    "ops",
    [
        ["answer", "save", "reopen_last", "save", "complete", "read"],
        ["open_call", "save", "complete", "save", "complete", "read"],
        ["answer", "open_call", "save", "drop_last", "answer", "save", "read"],
        ["prompt", "save", "metadata", "save", "metadata", "read", "save", "read"],
    ],
)
def test_sequences_that_change_what_was_saved_last(ops: list[str]) -> None:
    pair = _Pair(11)
    expected = pair.save()
    for name in ops:
        if name == "read":
            assert pair.store.text_of("i") == expected
        elif name == "save":
            expected = pair.save()
        else:
            pair.both(_op(name))


class _Text(str):
    pass


_ANY_VALUE = st.sampled_from(
    [
        "text",
        7,
        2.5,
        None,
        True,
        Decimal("1.50"),
        _Text("a str subclass"),
        datetime.date(2026, 1, 2),
        datetime.datetime(2026, 1, 2, 3, 4),
        Timestamp("2026-12-07T03:00:00Z"),
        b"bytes",
        {1, 2},
        (1, "two"),
        ["a", {"b": [1, 2]}],
        {"k": {"nested": Decimal("2")}},
        {("tuple", "key"): 1},
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["inputs", "call_extra", "message_extra", "usage_extra", "part_extra", "json", "as_of"]),
    _ANY_VALUE,
)
def test_a_value_the_save_keeps_unwritten_is_one_writing_takes(where: str, value: Any) -> None:
    from onellm.messages import JsonPart

    usage = _usage(random.Random(1))
    part = TextPart("ok")
    call = ToolCall(id="c1", tool="t", inputs={"n": 1}, result=[part])
    message = Message(id="m1", tool_calls=[call], usage=usage)
    if where == "inputs":
        call.inputs["v"] = value
    elif where == "call_extra":
        call.extra["x-v"] = value
    elif where == "message_extra":
        message.extra["x-v"] = value
    elif where == "usage_extra":
        usage.extra["x-v"] = value
    elif where == "part_extra":
        part.extra["x-v"] = value
    elif where == "json":
        call.result = [JsonPart(json={"v": value})]
    else:
        usage.cost_lines[0].as_of = value
    reference = Instance(id="ref", state="running", messages=[message])
    try:
        expected: str | BaseException = reference.dumps()
    except Exception as error:  # what writing does is what the save must do
        expected = error
    store = MemoryInstanceStore()
    kept = Instance(id="ref", state="running", messages=[message])
    if isinstance(expected, BaseException):
        with pytest.raises(type(expected)):
            store.save_sync(kept)
    else:
        store.save_sync(kept)
        assert store.text_of("ref") == expected


def test_a_subclass_of_a_part_is_written_at_once_as_before() -> None:
    class Noted(TextPart):
        pass

    def made() -> Instance:
        return Instance(id="sub", state="running", messages=[Message(id="m", assistant=[Noted("hello")])])

    store = MemoryInstanceStore()
    store.save_sync(made())
    assert store._items["sub"].frozen is None  # not vouched for by the quick check: written now
    assert store.text_of("sub") == made().dumps()


def test_a_header_attribute_deleted_is_saved_as_its_default() -> None:
    store = MemoryInstanceStore()
    inst = Instance(id="gone", name="named", state="running")
    store.save_sync(inst)
    del inst.name  # reads the dataclass's default from now on
    store.save_sync(inst)
    assert store.text_of("gone") == inst.dumps()
    assert "name:" not in inst.dumps()
