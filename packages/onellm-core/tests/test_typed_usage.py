"""`typed_usage.py` (checked by mypy strict) is real code: each function runs on the scripted provider and gives what
its annotations say."""

from __future__ import annotations

from decimal import Decimal

import anyio
import pytest

import onellm
from onellm.testing import ScriptedProvider, ScriptStep

from . import typed_usage as typed

INVOICE = '{"customer": "ACME Ltd", "total": 120.50}'


@pytest.fixture
def openai() -> ScriptedProvider:
    return ScriptedProvider("openai")


@pytest.fixture
def runtime(openai: ScriptedProvider) -> onellm.Runtime:
    rt = onellm.Runtime(environ={})
    rt.providers.set("openai", openai)
    return rt


def run(runtime: onellm.Runtime, function: object, *args: object) -> object:
    async def main() -> object:
        with onellm.use_runtime(runtime):
            return await function(*args)  # type: ignore[operator]

    return anyio.run(main)


def test_the_verbs_give_the_types_they_declare(runtime: onellm.Runtime, openai: ScriptedProvider) -> None:
    openai.enqueue_text("2, 3 and 5.", INVOICE, '{"x": 1, "y": 2}', INVOICE, "Hello.")
    text, invoice, point, value, plain = run(runtime, typed.verbs)  # type: ignore[misc]
    assert (text, invoice, point, value, plain) == (
        "2, 3 and 5.",
        typed.Invoice("ACME Ltd", Decimal("120.50")),
        typed.Point(1, 2),
        typed.Invoice("ACME Ltd", Decimal("120.50")),
        "Hello.",
    )
    openai.assert_complete()


def test_typed_options_reach_the_request(runtime: onellm.Runtime, openai: ScriptedProvider) -> None:
    openai.enqueue_text("a", "b")
    assert run(runtime, typed.options) == "ab"
    first, second = openai.requests
    assert (first.temperature, first.max_output_tokens, first.stop_sequences) == (0.2, 200, ["\n\n"])
    assert second.tool_choice == onellm.ToolChoice("none")


def test_content_streams_embeddings_and_chat(runtime: onellm.Runtime, openai: ScriptedProvider) -> None:
    openai.enqueue_text("summary")
    assert run(runtime, typed.content) == "summary"
    assert [p.text for p in openai.requests[-1].messages[-1].user] == ["Summarize this:", "a short text"]  # type: ignore[union-attr]
    openai.enqueue(ScriptStep.text("Old pond, ", "a frog."), ScriptStep.text("Splash."))
    assert run(runtime, typed.streams) == "Old pond, a frog.[stop]Splash.Old pond, a frog."
    one, many = run(runtime, typed.embeddings)  # type: ignore[misc]
    assert (len(one), [len(v) for v in many]) == (8, [8, 8])
    openai.enqueue_text("2.", INVOICE, INVOICE)
    assert run(runtime, typed.conversation) == ("2.", typed.Invoice("ACME Ltd", Decimal("120.50")))
    openai.enqueue_text("Hi.", INVOICE)
    assert run(runtime, typed.on_a_runtime, runtime) == ("Hi.", typed.Invoice("ACME Ltd", Decimal("120.50")))
    openai.assert_complete()


def test_the_blocking_twins(runtime: onellm.Runtime, openai: ScriptedProvider) -> None:
    openai.enqueue_text("Hi.", INVOICE, INVOICE)
    with onellm.use_runtime(runtime):
        text, invoice, one, many = typed.blocking()
    assert (text, invoice, len(one), len(many)) == ("Hi.", typed.Invoice("ACME Ltd", Decimal("120.50")), 8, 2)


def test_an_argument_error_names_the_path() -> None:
    assert typed.errors({"customer": "ACME", "total": "lots"}) == "total"
