"""Every bad input a decider run can meet is a typed error naming the question, path or file position, and what can
be refused before sending sends nothing and saves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onellm.errors import BadDefinitionError
from onellm.testing import ScriptedDecisionProvider

pytestmark = pytest.mark.anyio


def _criteria(count: int) -> str:
    return "\n".join(f"      c{i}: Option {i}" for i in range(count))


BAD_DEFINITIONS = [
    ("model: jev-latest\nquestions: {}\n", "a decider needs at least one question", 2, 12),
    ("model: jev-latest\nstate: x\n", "a decider needs at least one question", 1, 1),
    (
        f"model: jev-latest\nquestions:\n  topic:\n    type: choice\n    instructions: Which?\n    criteria:\n{_criteria(1)}\n",
        "a choice question takes 2 to 255 criteria, found 1",
        7,
        7,
    ),
    (
        f"model: jev-latest\nquestions:\n  topic:\n    type: choice\n    instructions: Which?\n    criteria:\n{_criteria(256)}\n",
        "a choice question takes 2 to 255 criteria, found 256",
        7,
        7,
    ),
    (
        "model: jev-latest\nquestions:\n  level:\n    type: score\n    instructions: How much?\n"
        "    criteria: [a, b, c, d, e, f, g, h, i, j, k]\n",
        "a score question takes 2 to 10 levels, found 11",
        6,
        15,
    ),
    (
        "model: jev-latest\nquestions:\n  bad id!:\n    type: noul\n    instructions: Q?\n",
        "a question id has 1 to 64 letters",
        3,
        3,
    ),
    (
        'model: jev-latest\nquestions:\n  q:\n    type: noul\n    instructions: Q?\n    forEach: "{{ .a }} and {{ .b }}"\n',
        "forEach must be exactly one {{ ... }} action",
        6,
        14,
    ),
    (
        "model: jev-latest\nquestions:\n  q:\n    type: noul\n    instructions: Q?\n    forEach: items\n",
        "forEach must be exactly one {{ ... }} action",
        6,
        14,
    ),
]


@pytest.mark.parametrize(("text", "problem", "line", "column"), BAD_DEFINITIONS)
async def test_a_bad_definition_names_its_file_position_and_sends_nothing(
    h: Any, tmp_path: Path, text: str, problem: str, line: int, column: int
) -> None:
    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(tmp_path / "d", text)
    with pytest.raises(BadDefinitionError) as caught:
        await runtime.decide(folder, {})
    error = caught.value
    assert problem in error.detail
    assert (error.file, error.line, error.column) == (str(folder / "decider.yaml"), line, column)
    assert engine.requests == []
    assert await runtime.list_decisions() == []


async def test_a_value_that_is_not_json_is_a_decider_input_error_naming_the_path(h: Any, tmp_path: Path) -> None:
    from onellm.errors import DeciderInputError

    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(
        tmp_path / "d",
        'model: jev-latest\nstate:\n  ticket: "{{ .inputs.ticket }}"\nquestions:\n  q: {type: noul, instructions: Q?}\n',
    )
    with pytest.raises(DeciderInputError) as caught:
        await runtime.decide(folder, {"ticket": {"score": float("nan")}})
    assert caught.value.path == "state.ticket.score"
    assert engine.requests == []


async def test_a_chat_engine_refuses_a_state_that_is_not_json_before_sending(h: Any, tmp_path: Path) -> None:
    from onellm.errors import DeciderInputError

    chat = h.ChatByFunction("openai", lambda request: "{}")
    runtime = h.runtime_with(chat)
    folder = h.write_decider(
        tmp_path / "d", 'model: gpt-6-luna\nstate: "{{ .inputs.x }}"\nquestions:\n  q: {type: noul, instructions: Q?}\n'
    )
    with pytest.raises(DeciderInputError) as caught:
        await runtime.decide(folder, {"x": [1, float("inf")]})
    assert caught.value.path == "state[1]"
    assert chat.requests == []


async def test_an_image_without_its_bytes_is_refused_before_sending(h: Any, tmp_path: Path) -> None:
    from onellm.errors import DeciderInputError
    from onellm.messages import AssetPart

    engine = ScriptedDecisionProvider("openai")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(
        tmp_path / "d",
        'model: openai-decisions\nstate:\n  photo: "{{ .inputs.photo }}"\nquestions:\n  q: {type: noul, instructions: Q?}\n',
    )
    stored_only = AssetPart(content_type="image/png", key="photos/1.png", storage="files")
    with pytest.raises(DeciderInputError, match=r"state\.photo: the image has no content"):
        await runtime.decide(folder, {"photo": stored_only})
    assert engine.requests == []


async def test_logic_that_returns_something_that_is_not_json_is_an_output_error(h: Any, tmp_path: Path) -> None:
    from onellm.errors import DeciderOutputError

    engine = ScriptedDecisionProvider("typesafe")
    runtime = h.runtime_with(engine)
    folder = h.write_decider(
        tmp_path / "d",
        "model: jev-latest\nquestions:\n  q: {type: noul, instructions: Q?}\n",
        decider__py="def decide(answers, inputs):\n    return object()\n",
    )
    with pytest.raises(DeciderOutputError, match="decide returned a value that is not JSON data") as caught:
        await runtime.decide(folder, {})
    assert caught.value.path == "outputs"
    [summary] = await runtime.list_decisions()
    assert summary.state == "error"
