"""Definitions built in code save and load back equal, whatever text they hold."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.definitions import CacheOptions, Decider, Definition, LlmOptions, Question, Reference
from onellm.errors import BadDefinitionError
from onellm.messages import Message, TextPart

_text = st.text(max_size=30)
_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.decimals(min_value=-(10**9), max_value=10**9, places=6)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def definitions(draw: Any) -> Definition:
    prompts = draw(st.none() | st.lists(_text.map(lambda t: Message(user=[TextPart(t)])), max_size=3))
    refs = draw(
        st.none()
        | st.lists(
            st.builds(
                Reference, routine=st.text(min_size=1, max_size=20), tools=st.none() | st.lists(_text, max_size=2)
            ),
            max_size=3,
        )
    )
    return Definition(
        name=draw(st.none() | _text),
        description=draw(st.none() | _text),
        model=draw(st.none() | _text),
        temperature=draw(st.none() | st.decimals(min_value=0, max_value=2, places=3)),
        max_tokens=draw(st.none() | st.integers(1, 10**6)),
        system_prompt=draw(st.none() | st.text(max_size=200)),
        references=refs,
        initial_prompts=prompts,
        inputs=draw(st.none() | st.dictionaries(st.text(min_size=1, max_size=10), _plain, max_size=4)),
        extra=draw(
            st.dictionaries(st.text(min_size=1, max_size=10).filter(lambda k: k not in _KNOWN), _plain, max_size=3)
        ),
    )


_KNOWN = {
    "name", "description", "model", "serviceTier", "thinking", "temperature", "maxIterations", "maxTokens",
    "systemPrompt", "references", "workingDirectory", "initialPrompts", "inputs", "headers", "invocationMode",
    "llmTurnLogs", "missingKey", "hooks", "contextStrategy",
}  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(definitions())
def test_a_definition_built_in_code_loads_back_equal(definition: Definition) -> None:
    text = definition.dumps()
    again = Definition.loads(text)
    assert again == definition
    assert again.dumps() == text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(min_size=1, max_size=40).filter(str.strip),
    st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=30), min_size=2, max_size=6),
    _plain,
    st.none() | st.integers(1, 100),
)
def test_a_decider_built_in_code_loads_back_equal(
    instructions: str, criteria: dict[str, str], state: Any, samples: int | None
) -> None:
    decider = Decider(
        model="jev-latest",
        state=state,
        questions={
            "pick": Question(type="choice", instructions=instructions, criteria=criteria),
            "yes.no": Question(type="noul", instructions={"main": instructions}),
        },
        llm=LlmOptions(samples=samples, temperature=Decimal("0.5")),
        cache=CacheOptions(key="k"),
    )
    again = Decider.loads(decider.dumps())
    assert again == decider


_fuzz_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-200, 200)
    | st.decimals(-3, 3, places=2)
    | st.text(max_size=5)
    | st.sampled_from(["choice", "score", "noul", "{{ .a }}", "{{ .a }}{{ .b }}", "x" * 70, "a0", "t0"])
)
_fuzz_keys = st.sampled_from(
    [
        *("model", "state", "questions", "llm", "cache", "type", "instructions", "criteria", "forEach", "samples"),
        *("temperature", "thinking", "serviceTier", "key", "explicit", "effort", "budget", "q1", "a b", True, 1),
        *("references", "routine", "swarm", "tools", "required", "hooks", "file", "points", "contextStrategy"),
        *("triggerTokens", "triggerPercent", "keepLast", "missingKey", "invocationMode", "headers", "inputs"),
        *("initialPrompts", "user", "assistant", "toolCalls", "text", "tool", "result", "partOrder", "when"),
    ]
)
_fuzz_value = st.recursive(
    _fuzz_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(_fuzz_keys, c, max_size=4), max_leaves=20
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_fuzz_keys, _fuzz_value, max_size=6), st.booleans())
def test_any_plain_data_is_refused_typed_or_round_trips(data: dict[Any, Any], strict: bool) -> None:
    for kind in ("decider", "agent"):
        try:
            obj: Any = Decider.from_data(data) if kind == "decider" else Definition.from_data(data, strict=strict)
        except BadDefinitionError:
            continue
        out = obj.to_data()
        text = obj.dumps()
        again = Decider.loads(text) if kind == "decider" else Definition.loads(text, strict=False)
        assert again.to_data() == out
