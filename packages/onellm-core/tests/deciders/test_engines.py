"""The three engines: how questions are sent (whole, split by the token budget, 400 at a time, in flight at most 8),
how a chat model's probabilities become answers (samples averaged, off-schema replies retried three times, never
repaired), and what each call costs."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from onellm import Asset
from onellm.catalog import Catalog
from onellm.errors import CapabilityMissingError, ContextOverflowError, MalformedResponseError
from onellm.providers._request import ChatRequest
from onellm.testing import ScriptedDecisionProvider

pytestmark = pytest.mark.anyio

TRIAGE = """\
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
  urgency:
    type: score
    instructions: How urgent is it?
    criteria: [low, normal, high]
  angry:
    type: noul
    instructions: Is the customer angry?
"""


def _many(count: int, model: str = "jev-latest", state: str = '"{{ .inputs.title }}"') -> str:
    lines = [f"model: {model}", f"state: {state}", "questions:"]
    for i in range(count):
        lines += [f"  q{i:03d}:", "    type: noul", f"    instructions: Is statement {i} about the ticket true?"]
    return "\n".join(lines) + "\n"


def _small_window(tokens: int) -> Catalog:
    return Catalog.shipped().with_layers(
        {"name": "typesafe", "models": [{"name": "jev-latest", "contextWindow": tokens}]}
    )


# ------------------------------------------------------------------------------------------------------------ jev


async def test_jev_asks_every_question_in_one_request(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    result = await runtime.decide(h.write_decider(tmp_path / "triage", TRIAGE), {"title": "Refund please"})
    [request] = engine.requests
    assert (request.wire, request.model, request.state) == ("jev", "jev-latest", {"title": "Refund please"})
    assert [q.key for q in request.questions] == ["topic", "urgency", "angry"]
    assert result.answers == {
        "topic": {"type": "choice", "choice": "billing", "confidence": 0.5, "probabilities": {}},
        "urgency": {
            "type": "score",
            "score": 0,
            "confidence": 0.5,
            "probabilities": {},
            "legend": {"0": "low", "1": "normal", "2": "high"},
        },
        "angry": {"type": "noul", "noul": 0.5},
    }
    assert result.engine == "jev"
    assert result.model == "typesafe:jev-latest"
    assert len(result.calls) == 1
    assert result.calls[0].questions == ("topic", "urgency", "angry")


async def test_jev_splits_by_the_token_budget_and_every_request_has_the_whole_state(h: Any, tmp_path: Path) -> None:
    from onellm.catalog.counting import TokenEstimator

    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    runtime.catalog = _small_window(600)
    title = "x" * 1200  # about 300 tokens of state
    result = await runtime.decide(h.write_decider(tmp_path / "d", _many(30)), {"title": title})
    assert len(engine.requests) > 2
    assert all(r.state == title for r in engine.requests)
    asked = [q.key for r in engine.requests for q in r.questions]
    assert asked == [f"q{i:03d}" for i in range(30)]  # each once, in order
    estimator = TokenEstimator(runtime.catalog.resolve("jev-latest"))
    for request in engine.requests:
        assert estimator.text(engine.body(request).decode()) <= 600 * 0.9 + 5
    assert list(result.answers) == [f"q{i:03d}" for i in range(30)]
    assert len(result.calls) == len(engine.requests)
    assert result.cost.total == sum(c.cost for c in result.calls if c.cost is not None)


async def test_jev_keeps_at_most_eight_requests_in_flight(h: Any, tmp_path: Path) -> None:
    engine = h.SlowDecisions("typesafe")
    runtime = h.runtime_with(engine)
    runtime.catalog = _small_window(55)  # one question a request
    await runtime.decide(h.write_decider(tmp_path / "d", _many(20)), {"title": "t"})
    assert len(engine.requests) == 20
    assert engine.most_in_flight == 8


async def test_a_question_too_large_for_the_window_is_refused_before_sending(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    runtime.catalog = _small_window(200)
    with pytest.raises(ContextOverflowError, match=r"question 'q000' with the state needs about"):
        await runtime.decide(h.write_decider(tmp_path / "d", _many(2)), {"title": "x" * 2000})
    assert engine.requests == []
    assert await runtime.list_decisions() == []


async def test_an_image_sent_to_jev_is_capability_missing_and_nothing_is_sent(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(
        tmp_path / "d",
        'model: jev-latest\nstate:\n  photo: "{{ .inputs.photo }}"\nquestions:\n  broken: {type: noul, instructions: Broken?}\n',
    )
    with pytest.raises(CapabilityMissingError, match=r"takes no images.*state\.photo"):
        await runtime.decide(folder, {"photo": Asset.from_bytes(b"\x89PNG....", "image/png")})
    assert engine.requests == []
    assert await runtime.list_decisions() == []


# --------------------------------------------------------------------------------------------- openai decisions


async def test_openai_decisions_sends_at_most_400_questions_a_request(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("openai")
    runtime = h.runtime_with(engine)
    result = await runtime.decide(h.write_decider(tmp_path / "d", _many(401, model="openai-decisions")), {"title": "t"})
    assert [len(r.questions) for r in engine.requests] == [400, 1]
    assert {r.wire for r in engine.requests} == {"openai"}
    assert all(r.cache_key == "d" for r in engine.requests)  # the decider's name by default
    assert result.engine == "openai-decisions"
    assert len(result.answers) == 401


async def test_openai_decisions_takes_the_images_of_the_state(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("openai")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(
        tmp_path / "d",
        'model: openai-decisions\nstate:\n  photos: "{{ .inputs.photos }}"\n'
        "questions:\n  broken: {type: noul, instructions: Broken?}\ncache: {key: claims, explicit: true}\n",
    )
    a = Asset.from_bytes(b"a", "image/png")
    b = Asset.from_bytes(b"b", "image/jpeg")
    await runtime.decide(folder, {"photos": [a, b]})
    [request] = engine.requests
    assert request.state == {"photos": ["[image 1]", "[image 2]"]}
    assert request.images == [a, b]
    assert (request.cache_key, request.cache_explicit) == ("claims", True)
    body = json.loads(engine.body(request))
    assert [p["type"] for p in body["input"][0]["content"]] == ["input_json", "input_image", "input_image"]
    assert body["input"][0]["content"][-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    assert body["prompt_cache_key"] == "claims"


# ------------------------------------------------------------------------------------------------------- chat


def _chat_reply(probabilities: dict[str, dict[str, float]]) -> Any:
    def reply(request: ChatRequest) -> str:
        question = request.messages[-1].user_text
        for needle, given in probabilities.items():
            if needle in question:
                return json.dumps({"probabilities": given})
        raise AssertionError(question)

    return reply


CHAT = TRIAGE.replace("model: jev-latest", "model: gpt-6-luna")
CHAT_ANSWERS = {
    "Which team": {"billing": 0.8, "orders": 0.2},
    "How urgent": {"0": 0.2, "1": 0.3, "2": 0.5},
    "angry": {"yes": 0.25, "no": 0.75},
}


def _confidence(ps: list[float]) -> float:
    return 1 - (-sum(p * math.log(p) for p in ps if p > 0)) / math.log(len(ps))


async def test_a_chat_model_answers_one_question_a_call_over_one_shared_prefix(h: Any, tmp_path: Path) -> None:
    chat = h.ChatByFunction("openai", _chat_reply(CHAT_ANSWERS))
    runtime = h.runtime_with(chat)
    result = await runtime.decide(h.write_decider(tmp_path / "triage", CHAT), {"title": "Refund <please>"})
    assert len(chat.requests) == 3
    systems = {r.system for r in chat.requests}
    assert len(systems) == 1
    [system] = systems
    assert system is not None
    assert system.endswith('State:\n{"title":"Refund \\u003cplease\\u003e"}')
    assert all(r.cache is not None and r.cache.key == "triage" for r in chat.requests)
    first = next(r for r in chat.requests if "Which team" in r.messages[-1].user_text)
    assert first.messages[-1].user_text == (
        "Question: Which team should handle the ticket?\n\nOptions:\n"
        '- "billing": Charges and refunds\n- "orders": Delivery and returns'
    )
    assert first.response_format is not None
    assert first.response_format.schema is not None
    assert first.response_format.schema["properties"]["probabilities"]["required"] == ["billing", "orders"]
    assert result.answers["topic"] == {
        "type": "choice",
        "choice": "billing",
        "confidence": pytest.approx(_confidence([0.8, 0.2])),
        "probabilities": {"billing": 0.8, "orders": 0.2},
    }
    urgency = result.answers["urgency"]
    assert urgency["score"] == pytest.approx(0 * 0.2 + 1 * 0.3 + 2 * 0.5)
    assert urgency["confidence"] == pytest.approx(_confidence([0.2, 0.3, 0.5]))
    assert urgency["legend"] == {"0": "low", "1": "normal", "2": "high"}
    assert result.answers["angry"] == {"type": "noul", "noul": 0.25}
    assert result.engine == "chat"
    # Priced as the model prices any call: 3 calls of 1000 in and 20 out at $0.10 and $0.50 per million (gpt-6-luna).
    assert result.cost.total == Decimal("0.00033")


async def test_samples_are_averaged_at_temperature_one(h: Any, tmp_path: Path) -> None:
    seen: dict[str, int] = {}

    def reply(request: ChatRequest) -> str:
        n = seen.setdefault("n", 0)
        seen["n"] = n + 1
        return json.dumps({"probabilities": {"yes": [0.2, 0.4, 0.9][n], "no": [0.8, 0.6, 0.1][n]}})

    chat = h.ChatByFunction("openai", reply)
    runtime = h.runtime_with(chat)
    folder = h.write_decider(
        tmp_path / "d",
        "model: gpt-6-luna\nquestions:\n  angry: {type: noul, instructions: Angry?}\nllm: {samples: 3}\n",
    )
    result = await runtime.decide(folder, {})
    assert len(chat.requests) == 3
    assert {r.temperature for r in chat.requests} == {1.0}
    assert result.answers["angry"]["noul"] == pytest.approx((0.2 + 0.4 + 0.9) / 3)
    assert sorted(c.sample for c in result.calls) == [1, 2, 3]


async def test_off_schema_replies_are_retried_three_times_never_repaired(h: Any, tmp_path: Path) -> None:
    replies = iter(
        [
            "yes, fairly likely",  # not JSON
            '{"probabilities": {"yes": 0.7}}',  # an option missing
            '{"probabilities": {"yes": 1.4, "no": 0.1}}',  # outside 0 to 1
            '{"probabilities": {"yes": 0.7, "no": 0.3}}',
        ]
    )
    chat = h.ChatByFunction("openai", lambda request: next(replies))
    runtime = h.runtime_with(chat)
    folder = h.write_decider(
        tmp_path / "d", "model: gpt-6-luna\nquestions:\n  angry: {type: noul, instructions: Angry?}\n"
    )
    result = await runtime.decide(folder, {})
    assert result.answers["angry"] == {"type": "noul", "noul": 0.7}
    assert [c.attempt for c in result.calls] == [1, 2, 3, 4]
    assert [bool(c.off_schema) for c in result.calls] == [True, True, True, False]
    assert result.cost.total == 4 * result.calls[0].cost  # every attempt was paid for


async def test_a_model_off_schema_four_times_fails_naming_the_question(h: Any, tmp_path: Path) -> None:
    chat = h.ChatByFunction("openai", lambda request: '{"answer": "yes"}')
    runtime = h.runtime_with(chat)
    folder = h.write_decider(
        tmp_path / "d", "model: gpt-6-luna\nquestions:\n  angry: {type: noul, instructions: Angry?}\n"
    )
    with pytest.raises(MalformedResponseError, match=r"question 'angry'.*4 times"):
        await runtime.decide(folder, {})
    assert len(chat.requests) == 4
    [summary] = await runtime.list_decisions()
    stored = await runtime.get_decision(summary.instance_id)
    assert stored is not None
    assert stored.instance.state == "error"
    assert len(stored.calls) == 4
    assert all(c.off_schema for c in stored.calls)
    assert summary.cost == 4 * stored.calls[0].cost


async def test_a_long_shared_prefix_is_cached_by_a_first_call_that_runs_alone(h: Any, tmp_path: Path) -> None:
    chat = h.ChatByFunction(
        "openai", lambda request: json.dumps({"probabilities": {"yes": 0.5, "no": 0.5}}), delay=0.01
    )
    runtime = h.runtime_with(chat)
    text = _many(4, model="gpt-6-luna")
    result = await runtime.decide(h.write_decider(tmp_path / "d", text), {"title": "word " * 2000})
    assert len(result.answers) == 4
    assert chat.events[0][0] == "start"
    assert chat.events[1] == ("end", chat.events[0][1])
    assert chat.most_in_flight == 3  # then the other three together


async def test_a_short_prefix_sends_every_call_at_once(h: Any, tmp_path: Path) -> None:
    chat = h.ChatByFunction("openai", lambda request: json.dumps({"probabilities": {"yes": 1, "no": 0}}), delay=0.01)
    runtime = h.runtime_with(chat)
    await runtime.decide(h.write_decider(tmp_path / "d", _many(4, model="gpt-6-luna")), {"title": "short"})
    assert chat.most_in_flight == 4


# ------------------------------------------------------------------------------------------------------- forEach


FOR_EACH = """\
model: jev-latest
questions:
  line-ok:
    type: noul
    instructions: "Is order line {{ .index }} correct? {{ .item.sku }}"
    forEach: "{{ .inputs.lines }}"
"""


async def test_for_each_asks_once_per_element_and_answers_a_list_in_order(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe", answer=lambda q: 0.1 * (q.index or 0))
    runtime = h.runtime_with(engine)
    result = await runtime.decide(
        h.write_decider(tmp_path / "d", FOR_EACH), {"lines": [{"sku": "A"}, {"sku": "B"}, {"sku": "C"}]}
    )
    assert [(q.key, q.instructions, q.question_id, q.index) for q in engine.requests[0].questions] == [
        ("line-ok[0]", "Is order line 0 correct? A", "line-ok", 0),
        ("line-ok[1]", "Is order line 1 correct? B", "line-ok", 1),
        ("line-ok[2]", "Is order line 2 correct? C", "line-ok", 2),
    ]
    assert result.answers == {
        "line-ok": [{"type": "noul", "noul": 0.0}, {"type": "noul", "noul": 0.1}, {"type": "noul", "noul": 0.2}]
    }


async def test_an_empty_for_each_asks_nothing_and_sends_nothing(h: Any, tmp_path: Path) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    result = await runtime.decide(h.write_decider(tmp_path / "d", FOR_EACH), {"lines": []})
    assert engine.requests == []
    assert result.answers == {"line-ok": []}
    assert result.calls == []
    assert result.cost.total == 0
    assert result.usage is None
    assert result.instance.state == "stopped"


async def test_one_failing_request_of_many_fails_the_run_with_its_own_error(h: Any, tmp_path: Path) -> None:
    from onellm.errors import OverloadedError

    def answer(question: Any) -> Any:
        if question.key == "q013":
            raise OverloadedError("busy", provider="typesafe", status=503)
        return 0.5

    engine = ScriptedDecisionProvider("typesafe", answer=answer)
    runtime = h.runtime_with(engine)
    runtime.catalog = _small_window(55)  # one question a request
    with pytest.raises(OverloadedError, match="busy"):
        await runtime.decide(h.write_decider(tmp_path / "d", _many(20)), {"title": "t"})
    [summary] = await runtime.list_decisions()
    stored = await runtime.get_decision(summary.instance_id)
    assert stored is not None
    assert stored.instance.state == "error"
    assert 0 < len(stored.calls) < 20  # what was answered before the failure is kept, with its cost
    assert summary.cost == sum(c.cost for c in stored.calls if c.cost is not None)
