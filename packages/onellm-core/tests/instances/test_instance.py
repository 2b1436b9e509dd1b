"""The instance model: every key of the format, states, fork and duplicate, ids, and how saving reuses text."""

from __future__ import annotations

import copy
import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from onellm.errors import BadDefinitionError, OnellmError, UnwritableValueError
from onellm.instances import (
    HEADER_KEYS,
    AskUser,
    Compaction,
    FileInstanceStore,
    ForkOrigin,
    Instance,
    InstanceFailure,
    InstanceState,
    InvalidInstanceIdError,
    MemoryInstanceStore,
    PendingApproval,
    is_valid_instance_id,
    new_instance_id,
    validate_instance_id,
)
from onellm.messages import CostLine, Message, TextPart, Timestamp, ToolCall, Usage
from onellm.testing.store_conformance import RICH_INSTANCE
from onellm.yamlio import emit_block, emit_mapping, safe_load


def conversation(n: int, instance_id: str = "conv") -> Instance:
    inst = Instance(id=instance_id, name="Conversation", model="claude-haiku", state="waiting")
    for i in range(n):
        if i % 2 == 0:
            inst.messages.append(Message(id=f"m{i}", user=[TextPart(text=f"question {i}")]))
        else:
            inst.messages.append(
                Message(
                    id=f"m{i}",
                    assistant=[TextPart(text=f"answer {i}\nover two lines")],
                    tool_calls=[
                        ToolCall(
                            id=f"c{i}", tool="read_file", inputs={"path": f"f{i}.txt"}, result=[TextPart(text="x")]
                        )
                    ],
                )
            )
    return inst


class CountingToData:
    """Counts the message blocks written (`Instance._emit`): a message whose text is reused is never written again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = Instance._emit

        def counted(inst: Instance, msg: Message, *args: Any) -> str:
            self.calls += 1
            return original(inst, msg, *args)

        monkeypatch.setattr(Instance, "_emit", counted)


def test_every_key_of_the_format_is_an_attribute() -> None:
    inst = Instance.loads(RICH_INSTANCE)
    assert inst.id == "rich-1"
    assert inst.agent_definition == "agents/clerk.yaml"
    assert (inst.name, inst.description, inst.model) == ("Court clerk", "Looks up dockets", "claude-sonnet-4-5")
    assert inst.service_tier == "priority"
    assert inst.thinking == {"effort": "high", "budget": 2048}
    assert inst.temperature == Decimal("0.3")
    assert (inst.max_iterations, inst.max_tokens) == (40, 4096)
    assert inst.system_prompt == "You are the clerk.\nAnswer briefly.\n"
    assert inst.references == [{"routine": "/agent-tools/os/read-file", "tools": ["read_file"], "futureRefKey": "kept"}]
    assert inst.working_directory == "{{ .inputs.root }}"
    assert inst.initial_prompts == [{"user": [{"text": "Case {{ .inputs.caseNo }}"}]}]
    assert inst.inputs == {"caseNo": "24-1234"}
    assert inst.headers == {"X-Team": "clerks"}
    assert inst.invocation_mode == "autonomous"
    assert inst.llm_turn_logs is False
    assert inst.missing_key == "error"
    assert inst.hooks == [{"file": "hooks/audit.js", "points": ["beforeToolCall"]}]
    assert inst.context_strategy == {"type": "compact", "keepLast": 6}
    assert inst.requested_model == "claude-sonnet"
    assert inst.max_image_size == 1568
    assert inst.state == "waiting_for_approval"
    assert inst.effective_state is InstanceState.WAITING_FOR_APPROVAL
    assert (inst.caller_instance_id, inst.spawner_instance_id) == ("parent-7", "parent-7")
    assert inst.caller_tool_call_id == "call_parent_1"
    assert inst.delegation_prompt == "Find the docket"
    assert inst.run_started_at == Timestamp("2026-11-05T09:30:00.1234567Z")
    assert inst.run_started_at is not None
    assert inst.run_started_at.hundred_ns == 7
    assert inst.rendered_system_prompt == "You are the clerk.\nAnswer briefly.\n"
    assert inst.metadata is not None
    assert inst.metadata["futureMeta"] == 3
    assert inst.error == InstanceFailure(type="RateLimitError", message="slow down", extra={"futureErrorKey": True})
    assert inst.cancelled is False
    assert inst.capabilities == {"readRoots": ["/srv/cases"], "writeRoots": [], "shell": {"enabled": False}}
    assert inst.capabilities_recorded is True
    assert inst.ask_user == AskUser(tool_call_id="call_ask", message_id="m2", extra={"futureAskKey": "x"})
    assert inst.forked_from == ForkOrigin(instance_id="origin-1", message_id="m0")
    assert inst.extra == {"boundSubscription": {"topic": "dockets", "since": 3}}
    (approval,) = inst.pending_approvals
    assert approval == PendingApproval(
        tool_call_id="call_2",
        tool="delete_file",
        message_id="m2",
        inputs={"path": "/srv/cases/old.txt"},
        reason="deletes a file",
        requested_at=Timestamp("2026-11-05T09:31:00Z"),
        extra={"futureApprovalKey": [1, 2]},
    )
    assert not approval.decided
    (compaction,) = inst.compactions
    assert compaction == Compaction(
        strategy="clearToolResults",
        at=Timestamp("2026-11-05T09:30:30Z"),
        replaced_message_ids=["m0"],
        cost=Decimal("0.0012"),
        at_message_id="m1",
        replaced_cost=Decimal("0.25"),
        extra={"futureCompactionKey": "y"},
    )
    assert [m.id for m in inst.messages] == ["m1", "m2"]
    assert inst.messages[1].extra == {"futureMessageKey": {"a": [1, {"b": 2}]}}


def test_header_keys_are_written_in_the_spec_order_with_messages_last() -> None:
    inst = Instance.loads(RICH_INSTANCE)
    inst.state = "stopped"  # a change: the file is written again from the model
    written = list(safe_load(inst.dumps()))
    known = [k for k in written if k in HEADER_KEYS]
    assert known == [k for k in HEADER_KEYS if k in written]
    assert written[-3:] == ["pendingApprovals", "compactions", "messages"]
    assert written.index("boundSubscription") == written.index("pendingApprovals") - 1


def test_a_reader_accepts_any_key_order() -> None:
    text = "messages:\n- id: a\n  user:\n  - text: hi\nstate: waiting\ninstanceId: backwards\n"
    inst = Instance.loads(text)
    assert (inst.id, inst.state, len(inst.messages)) == ("backwards", "waiting", 1)
    assert inst.dumps() == text
    inst.state = "stopped"
    assert inst.dumps() == "instanceId: backwards\nstate: stopped\nmessages:\n- id: a\n  user:\n  - text: hi\n"


@pytest.mark.parametrize("state", ["running", "waiting", "waiting_for_approval", "stopped", "error"])
def test_known_states(state: str) -> None:
    inst = Instance.loads(f"instanceId: s\nstate: {state}\n")
    assert inst.effective_state == InstanceState(state)
    assert inst.state == state


def test_an_unknown_state_is_kept_and_treated_as_stopped() -> None:
    text = "instanceId: s\nstate: paused_by_operator\n"
    inst = Instance.loads(text)
    assert inst.state == "paused_by_operator"
    assert inst.effective_state is InstanceState.STOPPED
    assert inst.dumps() == text
    inst.name = "renamed"
    assert "state: paused_by_operator\n" in inst.dumps()
    assert Instance(id="x").effective_state is InstanceState.STOPPED


def test_null_and_absent_are_the_same() -> None:
    inst = Instance.loads("instanceId: nn\nname: ~\nfuture: null\nmetadata:\n  renderedSystemPrompt: ~\n")
    assert inst.name is None
    assert "future" not in inst.extra
    assert inst.rendered_system_prompt is None
    inst.state = "stopped"
    assert inst.dumps() == "instanceId: nn\nstate: stopped\nmetadata:\n  renderedSystemPrompt: null\n"


def test_a_list_written_empty_stays_empty_and_an_absent_one_stays_absent() -> None:
    inst = Instance.loads("instanceId: e\npendingApprovals: []\nmessages: []\n")
    inst.state = "waiting"
    assert inst.dumps() == "instanceId: e\nstate: waiting\npendingApprovals: []\nmessages: []\n"
    plain = Instance.loads("instanceId: e\n")
    plain.state = "waiting"
    assert plain.dumps() == "instanceId: e\nstate: waiting\n"


def test_timestamps_keep_100_ns() -> None:
    inst = Instance(id="t", run_started_at=Timestamp("2026-11-05T09:30:00.1234567+05:30"))
    text = inst.dumps()
    assert 'runStartedAt: "2026-11-05T09:30:00.1234567+05:30"\n' in text
    assert Instance.loads(text).run_started_at == inst.run_started_at


def test_approvals_record_decisions() -> None:
    entry = PendingApproval(tool_call_id="c1", tool="rm", reason="needs approval")
    entry.approve()
    assert entry.to_data() == {"toolCallId": "c1", "tool": "rm", "reason": "needs approval", "decision": "approved"}
    entry.deny("not today")
    assert entry.to_data()["decision"] == "denied"
    assert entry.to_data()["reason"] == "not today"


def test_replaced_cost_is_written_as_a_decimal_string() -> None:
    inst = Instance(id="c", compactions=[Compaction(strategy="compact", replaced_cost=Decimal("0.10"))])
    assert 'replacedCost: "0.10"\n' in inst.dumps()
    assert Instance.loads(inst.dumps()).compactions[0].replaced_cost == Decimal("0.10")


def test_rendered_system_prompt_lives_in_metadata() -> None:
    inst = Instance(id="r")
    inst.rendered_system_prompt = "Hi."
    assert inst.metadata == {"renderedSystemPrompt": "Hi."}
    inst.rendered_system_prompt = None
    assert inst.metadata == {}


# -- saving reuses text ---------------------------------------------------------------------------------------------


def test_appending_a_turn_writes_only_the_new_message(monkeypatch: pytest.MonkeyPatch) -> None:
    text = conversation(40).dumps()
    inst = Instance.loads(text)
    counter = CountingToData(monkeypatch)
    inst.messages.append(Message(id="m40", user=[TextPart(text="one more")]))
    appended = inst.dumps()
    assert counter.calls == 1
    assert appended == text + "- id: m40\n  user:\n  - text: one more\n"
    inst.state = "running"
    inst.messages.append(Message(id="m41", user=[TextPart(text="and another")]))
    changed = inst.dumps()
    assert counter.calls == 2
    assert changed.startswith("instanceId: conv\nname: Conversation\nmodel: claude-haiku\nstate: running\n")
    assert Instance.loads(changed) == inst


def test_an_unchanged_instance_returns_the_loaded_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = conversation(10).dumps()
    inst = Instance.loads(text)
    counter = CountingToData(monkeypatch)
    assert inst.dumps() is text
    assert counter.calls == 0


def test_replacing_a_message_rewrites_that_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    inst = Instance.loads(conversation(10).dumps())
    counter = CountingToData(monkeypatch)
    inst.messages[3] = msgspec.structs.replace(inst.messages[3], assistant=[TextPart(text="edited")])
    text = inst.dumps()
    assert counter.calls == 1
    assert Instance.loads(text).messages[3].assistant == [TextPart(text="edited")]


def test_a_hand_written_header_keeps_its_comments_while_unchanged() -> None:
    text = "# my notes\ninstanceId: h  # keep\nstate: waiting\nmessages:\n- id: a\n  user:\n  - text: hi\n"
    inst = Instance.loads(text)
    inst.messages.append(Message(id="b", user=[TextPart(text="next")]))
    assert inst.dumps() == text + "- id: b\n  user:\n  - text: next\n"


def test_a_header_is_unchanged_while_its_values_are_equal_whatever_objects_hold_them() -> None:
    import sys

    text = "# notes\ninstanceId: h\nname: Some name  # kept\ntemperature: 0.5\nmetadata:\n  k:\n  - 1\n  - x\nmessages: []\n"
    inst = Instance.loads(text)
    assert inst.name is not None
    assert inst.metadata is not None
    sys.intern(inst.name)  # interned in place, or an equal interned string is found
    inst.name = sys.intern("".join(["Some ", "name"]))
    inst.temperature = Decimal("0.5")  # a new object, equal and written alike
    inst.metadata = {"k": [1, "".join("x")]}
    assert inst.dumps() is text


def test_every_header_edit_shows_in_the_next_save_even_one_equal_by_value() -> None:
    # A save reuses the header text while the header is unchanged; these edits change it without a new attribute
    # value, or to a value Python calls equal that is written differently.
    text = "instanceId: h  # keep\ntemperature: 1\nstate: waiting\nmetadata:\n  count: 1\nmessages:\n- id: a\n  user:\n  - text: hi\n"
    inst = Instance.loads(text)
    assert inst.dumps() == text
    assert inst.metadata is not None
    inst.metadata["count"] = True  # in place, and True == 1
    assert "  count: true\n" in inst.dumps()
    inst.metadata["count"] = 1
    assert "  count: 1\n" in inst.dumps()
    inst.temperature = Decimal("1.0")  # == 1, written 1.0
    assert "temperature: 1.0\n" in inst.dumps()
    inst.temperature = 1.0  # a float equal to the decimal
    assert "temperature: 1.0\n" in inst.dumps()
    inst.extra["later"] = {"k": [1, 2]}
    assert "later:\n  k:\n  - 1\n  - 2\n" in inst.dumps()
    inst.extra["later"]["k"].append(3)
    assert "  - 3\n" in inst.dumps()
    inst.pending_approvals.append(PendingApproval(tool_call_id="c1", tool="t"))
    assert "pendingApprovals:\n- toolCallId: c1\n" in inst.dumps()
    inst.pending_approvals[0].decision = "approved"
    assert "  decision: approved\n" in inst.dumps()
    assert Instance.loads(inst.dumps()).pending_approvals[0].decision == "approved"


def test_a_header_value_that_cannot_be_pickled_is_still_written() -> None:
    inst = Instance.loads("instanceId: h\nstate: waiting\nmessages:\n- id: a\n  user:\n  - text: hi\n")

    class Unpicklable(str):
        def __reduce__(self) -> Any:
            raise TypeError("no")

    inst.extra["note"] = Unpicklable("plain")
    assert "note: plain\n" in inst.dumps()
    inst.extra["note"] = Unpicklable("other")
    assert "note: other\n" in inst.dumps()


@pytest.mark.parametrize(
    ("inst", "path", "kind"),
    [
        (
            Instance(id="u1", inputs={"when": datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)}),
            "inputs.when",
            "datetime",
        ),
        (Instance(id="u2", metadata={"tags": [1, {"k": b"raw"}]}), "metadata.tags[1].k", "bytes"),
        (Instance(id="u3", inputs={(1, 2): "pair"}), 'inputs["(1, 2)"]', "tuple (as a key)"),
        (Instance(id="u4", extra={"later": {1, 2}}), "later", "set"),
        (
            Instance(
                id="u5",
                messages=[
                    Message(user=[TextPart("hi")]),
                    Message(tool_calls=[ToolCall(id="c1", tool="t", inputs={"at": [datetime.date(2026, 1, 2)]})]),
                ],
            ),
            "messages[1].toolCalls[0].inputs.at[0]",
            "date",
        ),
    ],
)
def test_a_value_with_no_form_in_the_file_is_a_typed_error_naming_it(inst: Instance, path: str, kind: str) -> None:
    for _ in range(2):  # the second save takes the paths that reuse what the first one kept
        with pytest.raises(UnwritableValueError) as info:
            inst.dumps()
        assert (info.value.instance_id, info.value.path) == (inst.id, path)
        assert str(info.value).startswith(f"instance {inst.id}: {path} cannot be written: ")
        assert str(info.value).endswith(f"not a value of type {kind}")
        assert isinstance(info.value, TypeError)  # what writing such a value raised before


@pytest.mark.anyio
async def test_a_store_refuses_to_save_a_value_with_no_form_and_keeps_the_last_save(tmp_path: Path) -> None:
    for store in (FileInstanceStore(tmp_path), MemoryInstanceStore()):
        inst = Instance(id="keep", state="waiting", inputs={"n": 1})
        await store.save(inst)
        inst.inputs = {"n": 2, "when": datetime.datetime(2026, 1, 2)}
        with pytest.raises(UnwritableValueError, match=r"^instance keep: inputs\.when cannot be written"):
            await store.save(inst)
        saved = await store.load("keep")
        assert saved is not None
        assert saved.inputs == {"n": 1}


def test_header_entries_another_instance_wrote_are_reused_only_for_the_same_values() -> None:
    # The text of a list or mapping entry is kept for the next instance holding the same value: `1` and `True` are
    # equal values written apart, and a value that cannot be written fails each time.
    first = Instance(id="a", capabilities={"shell": {"enabled": True}}, references=[{"tools": ["x"]}])
    assert "capabilities:\n  shell:\n    enabled: true\n" in first.dumps()
    second = Instance(id="b", capabilities={"shell": {"enabled": 1}}, references=[{"tools": ["x"]}])
    assert "capabilities:\n  shell:\n    enabled: 1\n" in second.dumps()
    assert second.dumps() == emit_mapping(second.to_data())
    assert second.capabilities is not None
    second.capabilities["shell"]["enabled"] = True  # in place
    assert "capabilities:\n  shell:\n    enabled: true\n" in second.dumps()
    for _ in range(2):
        with pytest.raises(TypeError):
            Instance(id="c", capabilities={"shell": {"enabled": {1, 2}}}).dumps()
    # Two instances holding equal values, one edited in place after both were saved: the other keeps its text.
    one = Instance(id="d", metadata={"k": [1, 2]}, state="running")
    two = Instance(id="e", metadata={"k": [1, 2]}, state="running")
    before = two.dumps()
    one.dumps()
    assert one.metadata is not None
    one.metadata["k"].append(3)
    one.state = "waiting"
    assert one.dumps() == emit_mapping(one.to_data())
    two.state = "waiting"
    assert two.dumps() == before.replace("running", "waiting") == emit_mapping(two.to_data())


def test_header_values_of_every_kind_are_seen_when_they_change() -> None:
    # A save compares the header as serialized: values of the types it takes apart (a timestamp, a decimal) and
    # values it cannot serialize quickly (a record, a subclass) are seen too.
    text = "instanceId: h\ntemperature: 1.0\nstate: waiting\nrunStartedAt: 2026-01-02T03:04:05Z\nmessages: []\n"
    inst = Instance.loads(text)
    assert inst.dumps() == text
    inst.temperature = Decimal("1.00")  # == the old value, written otherwise
    assert "temperature: 1.00\n" in inst.dumps()
    inst.temperature = "1.00"  # type: ignore[assignment]  # the same text, another type
    assert 'temperature: "1.00"\n' in inst.dumps()
    inst.temperature = 1.0
    assert "temperature: 1.0\n" in inst.dumps()
    inst.run_started_at = Timestamp("2026-01-02T03:04:06Z")
    assert 'runStartedAt: "2026-01-02T03:04:06Z"\n' in inst.dumps()
    inst.run_started_at = "2026-01-02T03:04:06Z"  # type: ignore[assignment]  # a plain string with the same text
    assert 'runStartedAt: "2026-01-02T03:04:06Z"\n' in inst.dumps()
    inst.run_started_at = None
    assert "runStartedAt" not in inst.dumps()

    class Note(str):
        pass

    inst.extra["note"] = Note("first")
    assert "note: first\n" in inst.dumps()
    inst.extra["note"] = Note("second")
    assert "note: second\n" in inst.dumps()
    inst.extra["amounts"] = [Decimal("0.5")]
    assert "amounts:\n- 0.5\n" in inst.dumps()
    inst.extra["amounts"][0] = Decimal("0.50")
    assert "amounts:\n- 0.50\n" in inst.dumps()
    inst.extra["amounts"][0] = "0.50"
    assert 'amounts:\n- "0.50"\n' in inst.dumps()
    inst.extra["shape"] = (1, 2)
    assert "shape:\n- 1\n- 2\n" in inst.dumps()
    inst.extra["shape"] = [1, 2]  # written alike
    assert "shape:\n- 1\n- 2\n" in inst.dumps()
    inst.extra["shape"].append(1.0)
    assert "shape:\n- 1\n- 2\n- 1.0\n" in inst.dumps()
    inst.extra["shape"] = (True, 2)  # == (1, 2), written otherwise
    assert "shape:\n- true\n- 2\n" in inst.dumps()
    inst.extra["shape"] = [1, 2, 1.0]
    inst.extra["zero"] = {1: 0.0}
    assert "zero:\n  1: 0.0\n" in inst.dumps()
    inst.extra["zero"][1] = -0.0  # == 0.0
    assert "zero:\n  1: -0.0\n" in inst.dumps()
    del inst.extra["zero"][1]
    inst.extra["zero"][True] = -0.0  # a key == 1
    assert "zero:\n  true: -0.0\n" in inst.dumps()
    del inst.extra["zero"]
    inst.compactions.append(Compaction(strategy="summarize"))
    assert "compactions:\n- strategy: summarize\n" in inst.dumps()
    inst.compactions[0].cost = Decimal("0.10")
    assert "  cost: 0.10\n" in inst.dumps()
    inst.compactions.clear()
    assert "compactions" not in inst.dumps()
    assert Instance.loads(inst.dumps()).extra == inst.extra | {"shape": [1, 2, 1.0]}


_STARTS = {
    "canonical": "instanceId: i\nstate: running\nmessages:\n- id: a\n  user:\n  - text: hi\n- id: b\n  assistant:\n  - text: yo\n",
    "no final newline": "instanceId: i\nmessages:\n- id: a\n  user:\n  - text: hi\n- id: b\n  user:\n  - text: yo",
    "indented, with a comment": "instanceId: i\nmessages:\n  # first\n  - id: a\n    user:\n      - text: hi\n",
    "empty": "instanceId: i\nmessages: []\n",
    "no messages key": "instanceId: i\n",
}


@pytest.mark.parametrize("start", list(_STARTS))
@pytest.mark.parametrize("seed", range(12))
def test_a_save_reusing_the_last_saves_pieces_writes_what_writing_every_block_would(start: str, seed: int) -> None:
    # A save reuses the pieces of the messages the last save wrote, in the same place and unchanged. A twin put
    # through the same edits, whose every save looks at each message again, writes the same text each time.
    import random

    rng = random.Random(seed)
    inst = Instance.loads(_STARTS[start])
    twin = Instance.loads(_STARTS[start])
    pool = [_priced_turn(f"p{i}") for i in range(4)] + [
        Message(id=f"u{i}", user=[TextPart(text=f"u {i}")]) for i in range(4)
    ]
    for _ in range(30):
        op = rng.randrange(8)
        pick = rng.choice(pool)
        at = rng.randrange(len(inst.messages) + 1)
        for one in (inst, twin):
            messages = one.messages
            if op == 0 or not messages:
                messages.append(pick)
            elif op == 1:
                messages[-1] = pick
            elif op == 2:
                messages.pop()
            elif op == 3:
                messages.insert(at, pick)
            elif op == 4:
                del messages[min(at, len(messages) - 1)]
            elif op == 5:
                messages.append(messages[min(at, len(messages) - 1)])  # the same object twice
            elif op == 6 and messages[-1].tool_calls and messages[-1].tool_calls[0].result is None:
                messages[-1] = _answered(messages[-1], "ok") if one is inst else inst.messages[-1]
            else:
                one.state = "running" if one.state != "running" else "waiting"
        assert twin._source is not None
        twin._source.ends = None  # as if the last save had not been written block by block
        written = inst.dumps()
        assert written == twin.dumps()
        assert [m.id for m in Instance.loads(written).messages] == [m.id for m in inst.messages]


def _canonical(text: str) -> str:
    fresh = Instance.loads(text)
    fresh.forget_written_text()
    return fresh.dumps()


def _answered(pending: Message, result: str) -> Message:
    """The pending turn with its call answered: a new message (the old one's copy) holding the same usage object."""
    done = copy.copy(pending)
    done.tool_calls = [msgspec.structs.replace(pending.tool_calls[0], result=[TextPart(text=result)])]
    return done


def _priced_turn(message_id: str, **extra: Any) -> Message:
    usage = Usage(
        input_tokens=300,
        output_tokens=20,
        cost=Decimal("0.000800"),
        cost_lines=[
            CostLine(
                counter="inputTokens", quantity=300, per=1_000_000, unit_price=Decimal(2), amount=Decimal("0.000600")
            )
        ],
    )
    return Message(
        id=message_id,
        tool_calls=[ToolCall(id="c1", tool="lookup", inputs={"n": 1})],
        date_time="2026-01-02T03:04:05Z",
        usage=usage,
        **extra,
    )


@pytest.mark.parametrize("indent", [0, 2])
def test_a_turn_whose_calls_are_answered_is_written_as_if_from_scratch(
    indent: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onellm.instances._write import usage_lines as real

    written: list[Usage] = []

    def counting(usage: Usage, indent: int) -> str | None:
        written.append(usage)
        return real(usage, indent)

    monkeypatch.setattr("onellm.instances._model.usage_lines", counting)
    pad = " " * indent
    start = f"instanceId: i\nmessages:\n{pad}- id: a\n{pad}  user:\n{pad}  - text: hi\n"
    inst = Instance.loads(start)
    pending = _priced_turn("b")
    inst.messages.append(pending)
    assert inst.dumps() == start + emit_block(pending.to_data(), indent)
    inst.messages[-1] = _answered(pending, "ok")
    text = inst.dumps()
    assert text == start + emit_block(inst.messages[-1].to_data(), indent)
    assert f"{pad}    - text: ok\n" in text
    assert Instance.loads(text).messages[-1] == inst.messages[-1]
    # The pending turn's usage lines were written; the answered turn, which holds the same usage object, reused them.
    assert written == [pending.usage]


def test_answered_turn_reuses_usage_text_only_when_it_is_still_good() -> None:
    inst = Instance(id="i", state="running")
    pending = _priced_turn("b")
    inst.messages.append(pending)
    inst.dumps()
    assert pending.usage is not None
    pending.usage.output_tokens = 21  # edited in place before the answer replaced it: the old text is stale
    inst.messages[-1] = _answered(pending, "ok")
    text = inst.dumps()
    assert "outputTokens: 21\n" in text
    assert text == _canonical(text)

    later = _priced_turn("c", when="{{ true }}")  # a key after usage: nothing is reused
    inst.messages.append(later)
    inst.dumps()
    inst.messages[-1] = _answered(later, "fine")
    text = inst.dumps()
    assert text == _canonical(text)
    assert Instance.loads(text).messages[-1].when == "{{ true }}"


def test_new_blocks_follow_the_file_sequence_indentation() -> None:
    text = "instanceId: i\nmessages:\n  - id: a\n    user:\n      - text: hi\n"
    inst = Instance.loads(text)
    inst.messages.append(Message(id="b", user=[TextPart(text="next")]))
    out = inst.dumps()
    assert out == text + "  - id: b\n    user:\n    - text: next\n"
    assert [m.id for m in Instance.loads(out).messages] == ["a", "b"]


def test_a_file_without_a_final_newline_can_be_appended_to() -> None:
    text = "instanceId: i\nmessages:\n- id: a\n  user:\n  - text: hi"
    inst = Instance.loads(text)
    assert inst.dumps() == text
    inst.messages.append(Message(id="b", user=[TextPart(text="next")]))
    assert [m.id for m in Instance.loads(inst.dumps()).messages] == ["a", "b"]


def test_a_file_in_another_layout_is_written_canonically_once_changed() -> None:
    text = "{instanceId: flow, state: waiting, messages: [{id: a, user: [{text: hi}]}]}\n"
    inst = Instance.loads(text)
    assert inst.dumps() == text
    inst.messages.append(Message(id="b", user=[TextPart(text="next")]))
    assert inst.dumps() == (
        "instanceId: flow\nstate: waiting\nmessages:\n- id: a\n  user:\n  - text: hi\n- id: b\n  user:\n  - text: next\n"
    )


def test_blocks_the_fast_reader_declines_are_read_by_the_general_loader() -> None:
    text = (
        "instanceId: mixed\nmessages:\n"
        "- id: plain\n  user:\n  - text: hi\n"
        "- {id: flow, user: [{text: 'flow style'}]}\n"
        "- id: anchored\n  user:\n  - text: &t shared\n  - text: *t\n"
    )
    inst = Instance.loads(text)
    assert [m.id for m in inst.messages] == ["plain", "flow", "anchored"]
    assert inst.messages[2].user == [TextPart(text="shared"), TextPart(text="shared")]
    assert inst.dumps() == text
    inst.messages.append(Message(id="next"))
    assert inst.dumps() == text + "- id: next\n"


def test_save_writes_atomically_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    inst = conversation(4)
    path = tmp_path / "conv.yaml"
    inst.save(path)
    inst.messages.append(Message(id="m4"))
    inst.save(path, durable=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conv.yaml"]
    assert Instance.load(path) == inst


def test_load_names_the_file_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("instanceId: b\nmaxTokens: lots\n")
    with pytest.raises(BadDefinitionError) as caught:
        Instance.load(path)
    assert (caught.value.file, caught.value.line, caught.value.column) == (str(path), 2, 12)
    assert caught.value.path == "maxTokens"


def test_to_data_and_from_data_round_trip() -> None:
    inst = Instance.loads(RICH_INSTANCE)
    again = Instance.from_data(inst.to_data())
    assert again == inst
    with pytest.raises(BadDefinitionError):
        Instance.from_data(["not", "a", "mapping"])  # type: ignore[arg-type]


# -- fork and duplicate -----------------------------------------------------------------------------------------------


def test_fork_up_to_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    source = Instance.loads(RICH_INSTANCE)
    fork = source.fork("rich-fork", through="m1")
    assert fork.id == "rich-fork"
    assert [m.id for m in fork.messages] == ["m1"]
    assert fork.messages[0] is source.messages[0]
    assert fork.state == "stopped"
    assert fork.pending_approvals == []
    assert fork.run_started_at is None
    assert fork.forked_from == ForkOrigin(instance_id="rich-1", message_id="m1")
    assert fork.extra == source.extra
    assert fork.metadata == source.metadata
    assert fork.metadata is not source.metadata
    # The source is untouched.
    assert source.dumps() == RICH_INSTANCE
    # The fork's first save reuses the text of the shared messages.
    counter = CountingToData(monkeypatch)
    text = fork.dumps()
    assert counter.calls == 0
    assert "pendingApprovals" not in safe_load(text)
    assert Instance.loads(text) == fork


def test_duplicate_copies_the_whole_conversation() -> None:
    source = conversation(5, "orig")
    copy = source.duplicate("copy-1")
    assert [m.id for m in copy.messages] == [m.id for m in source.messages]
    assert copy.forked_from == ForkOrigin(instance_id="orig", message_id="m4")
    assert copy.state == "stopped"
    copy.messages.append(Message(id="only-in-copy"))
    assert len(source.messages) == 5
    generated = source.duplicate()
    assert generated.id is not None
    assert is_valid_instance_id(generated.id)
    assert generated.id != source.id


def test_fork_refuses_an_unknown_message_and_a_bad_id() -> None:
    source = conversation(3)
    with pytest.raises(LookupError):
        source.fork("f", through="nope")
    with pytest.raises(InvalidInstanceIdError):
        source.fork("not/valid")


def test_fork_of_an_empty_instance() -> None:
    fork = Instance(id="empty").fork("f")
    assert fork.forked_from == ForkOrigin(instance_id="empty", message_id=None)
    assert fork.messages == []


# -- ids --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("good", ["a", "A-b_9", "x" * 128, "01JC9K2W5R8N3Q4T6V7X9Y0Z1A", "-", "_"])
def test_valid_ids(good: str) -> None:
    assert validate_instance_id(good) == good
    assert is_valid_instance_id(good)


@pytest.mark.parametrize("bad", ["", "x" * 129, "a/b", "a\\b", "a.b", "a b", "é", "a\n", "ａ", None, 5])
def test_invalid_ids(bad: object) -> None:
    assert not is_valid_instance_id(bad)
    with pytest.raises(InvalidInstanceIdError) as caught:
        validate_instance_id(bad)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, OnellmError)
    assert caught.value.instance_id == bad


def test_new_ids_are_valid_and_distinct() -> None:
    ids = {new_instance_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(is_valid_instance_id(i) for i in ids)


def test_the_definition_the_run_started_from() -> None:
    inst = Instance.loads(RICH_INSTANCE)
    data = inst.definition_data()
    assert list(data)[:3] == ["name", "description", "model"]
    assert "state" not in data
    assert "instanceId" not in data
    assert data["boundSubscription"] == {"topic": "dockets", "since": 3}
    definition = inst.definition()
    assert (definition.name, definition.model, definition.max_iterations) == ("Court clerk", "claude-sonnet-4-5", 40)
    assert definition.warnings == []
    assert definition.references is not None
    assert definition.references[0].routine == "/agent-tools/os/read-file"


def test_a_message_edited_in_place_is_written_after_forget_written_text() -> None:
    inst = Instance.loads(conversation(4).dumps())
    inst.messages[1].assistant.append(TextPart(text="edited in place"))  # a settled message: answered, calls done
    assert "edited in place" not in inst.dumps()  # the remembered text wins, as the format's rule allows
    inst.forget_written_text()
    text = inst.dumps()
    assert "edited in place" in text
    assert Instance.loads(text) == inst


def test_repr_is_short() -> None:
    inst = conversation(30)
    assert repr(inst) == "Instance(id='conv', name='Conversation', state='waiting', model='claude-haiku', messages=30)"


def test_importing_instances_stays_light() -> None:
    """The YAML round-trip machinery loads only when a file needs it, not on import."""
    import subprocess
    import sys

    code = "import sys, onellm.instances; print(sorted(m for m in sys.modules if m.startswith('ruamel')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


HEADER = "instanceId: hostile\nstate: waiting\nmessages:\n- id: m1\n  user:\n  - text: fine\n"


@pytest.mark.parametrize(
    ("block", "line", "detail"),
    [
        ("- id: m2\n  usage:\n    inputTokens: " + "7" * 100_000 + "\n", 9, "characters"),
        ("- id: m2\n  extra: " + "[" * 3000 + "]" * 3000 + "\n", 8, "nested deeper"),
        ("- id: m2\n  extra: !!python/object/apply:os.system [ls]\n", 8, "tag"),
        (
            "- id: m2\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
            "  g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
            None,
            "alias",
        ),
        ("- id: m2\n  id: m3\n", 8, "duplicate key"),
        ("- id: m2\n  toolCalls:\n  - id: c1\n    tool: [not, a, name]\n", 10, "string"),
    ],
)
def test_hostile_message_blocks_fail_with_a_position(block: str, line: int | None, detail: str) -> None:
    with pytest.raises(BadDefinitionError) as caught:
        Instance.loads(HEADER + block, file="hostile.yaml")
    error = caught.value
    assert error.file == "hostile.yaml"
    assert detail in error.detail
    assert error.line is not None
    assert error.column is not None
    if line is not None:
        assert error.line == line
    else:
        assert error.line >= 7


def test_memory_store_sync_forms() -> None:
    from onellm.instances import MemoryInstanceStore

    store = MemoryInstanceStore()
    inst = conversation(3, "mem")
    store.save_sync(inst)
    assert "mem" in store
    assert len(store) == 1
    assert store.text_of("mem") == inst.dumps()
    loaded = store.load_sync("mem")
    assert loaded == inst
    assert loaded is not inst
    assert store.load_sync("other") is None
    assert store.assets("mem").put(b"x").storage == "memory"


def test_an_error_deep_in_a_large_file_of_another_layout_is_placed_without_the_round_trip_loader() -> None:
    """A file in flow style is read whole by the general loader; an error in it is placed by walking the C parser's
    events, however many values the file holds (the round-trip loader would refuse a file this large)."""
    from onellm.yamlio import MAX_DOCUMENT_NODES

    messages = ", ".join(f"{{id: m{i}, user: [{{text: hello {i}}}]}}" for i in range(MAX_DOCUMENT_NODES // 4))
    text = f"instanceId: big\nmessages: [{messages}, {{id: bad, user: [{{text: 5}}]}}]\n"
    with pytest.raises(BadDefinitionError) as caught:
        Instance.loads(text, file="big.yaml")
    err = caught.value
    index = MAX_DOCUMENT_NODES // 4
    assert err.path == f"messages[{index}].user[0].text"
    assert (err.line, err.column) == (2, text.split("\n")[1].index("{text: 5") + len("{text: ") + 1)


@pytest.mark.parametrize("loaded", [True, False])
def test_a_message_still_being_completed_is_written_as_it_is_now(loaded: bool) -> None:
    """A turn saved before its answer, and a turn saved with a tool call waiting for its result, are completed in
    place by the code that runs them: the next save writes what they hold then, never the text kept from before."""
    inst = conversation(2)
    waiting = Message(id="m2", user=[TextPart(text="question 2")])
    calling = Message(id="m3", assistant=[TextPart(text="let me look")], tool_calls=[ToolCall(id="c3", tool="ls")])
    inst.messages += [calling, waiting]
    first = inst.dumps()
    if loaded:
        inst = Instance.loads(first)
        calling, waiting = inst.messages[2], inst.messages[3]
    assert inst.dumps() == first
    calling.tool_calls[0].result = [TextPart(text="a.txt")]
    waiting.assistant = [TextPart(text="answer 2")]
    text = inst.dumps()
    assert "a.txt" in text
    assert "answer 2" in text
    assert Instance.loads(text) == inst
    calling.tool_calls[0].result[0] = TextPart(text="b.txt")  # settled now: the format's rule holds from here
    assert inst.dumps() == text


@pytest.mark.parametrize("built", [False, True], ids=["loaded", "built"])
def test_a_header_edited_key_by_key_is_written_as_a_header_written_whole(built: bool) -> None:
    # A save after a few header keys changed writes only those again and keeps the text of the others: what it
    # writes is what writing the whole header writes, whatever the edit.
    edits: list[Any] = [
        lambda i: setattr(i, "state", "waiting"),
        lambda i: setattr(i, "cancelled", True),
        lambda i: setattr(i, "name", None),
        lambda i: setattr(i, "name", "back: again"),
        lambda i: setattr(i, "temperature", 0.5),
        lambda i: setattr(i, "temperature", -0.0),
        lambda i: setattr(i, "temperature", 0.0),
        lambda i: setattr(i, "temperature", Decimal("0.50")),
        lambda i: setattr(i, "max_tokens", True),
        lambda i: setattr(i, "max_tokens", 1),
        lambda i: i.metadata.update(count=True),
        lambda i: i.metadata.update(count=1),
        lambda i: setattr(i, "run_started_at", Timestamp("2026-01-02T03:04:06Z")),
        lambda i: setattr(i, "run_started_at", "2026-01-02T03:04:06Z"),
        lambda i: i.extra.update(description="an extension key named like a header key"),
        lambda i: setattr(i, "state", "running"),
        lambda i: setattr(i, "description", "now the header key"),
        lambda i: setattr(i, "state", "stopped"),
        lambda i: setattr(i, "description", None),
        lambda i: i.extra.update(later={"k": [1, 2]}),
        lambda i: setattr(i, "state", "error"),
        lambda i: i.pending_approvals.append(PendingApproval(tool_call_id="c1", tool="t")),
        lambda i: setattr(i, "state", "waiting_for_approval"),
        lambda i: i.pending_approvals.clear(),
        lambda i: setattr(i, "state", "running"),
        lambda i: i.compactions.append(Compaction(strategy="summarize")),
        lambda i: setattr(i, "state", "waiting"),
        lambda i: setattr(i, "caller_instance_id", "parent"),
        lambda i: (i.metadata.update(count=[1]), setattr(i, "state", "running")),
        lambda i: (i.metadata["count"].append(2), setattr(i, "state", "stopped")),
        lambda i: (i.extra.clear(), setattr(i, "description", "back")),
        lambda i: (i.extra.update(name="an extension key named like a set header key"), setattr(i, "state", "x")),
        lambda i: (i.extra.clear(), setattr(i, "name", None)),
        lambda i: (setattr(i, "name", "again"), setattr(i, "temperature", -0.0)),
    ]
    text = (
        "instanceId: h\nname: first\nstate: running\nmetadata:\n  count: 1\nmessages:\n- id: a\n  user:\n  - text: hi\n"
    )
    kept = Instance.loads(text)
    whole = Instance.loads(text)
    if built:  # made in code: every save holds the values it wrote
        kept = Instance.from_data(kept.to_data())
    kept.state = "starting"  # written once in the canonical layout: from now on it has the text of each key
    whole.state = "starting"
    kept.dumps()
    for edit in edits:
        edit(kept)
        edit(whole)
        whole.forget_written_text()
        assert kept.dumps() == whole.dumps()
        assert kept.dumps() == whole.dumps()  # and again, with nothing changed


def test_a_header_cut_into_entries_joins_to_the_header_written_whole() -> None:
    from onellm.yamlio import emit_entries, emit_mapping

    header = Instance.loads(RICH_INSTANCE)._header_data()
    header["odd key"] = {"yes": [True, None, Decimal("1.50"), "two\nlines\n"], "n": ""}
    entries = emit_entries(header)
    assert len(entries) == len(header)
    assert "".join(entries) == emit_mapping(header)
    assert [emit_entries({key: value})[0] for key, value in header.items()] == entries
