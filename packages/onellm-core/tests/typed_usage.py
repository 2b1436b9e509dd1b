"""The public types as a mypy user meets them.

mypy checks this file in strict mode (it is listed in the root pyproject's `[tool.mypy] files`), so each annotation
below is a claim about onellm's signatures: `ask` without `output=` is a `str`, with `output=Invoice` an `Invoice`,
the request options are typed keywords, a stream's events are a union a `match` can take apart. `mistakes()` holds
what mypy must refuse, each line with its `# type: ignore[...]`: under strict, an ignore that is not needed is itself
an error, so if onellm's types grew loose again (`Any`), mypy would fail here. `test_typed_usage.py` runs every other
function on the scripted provider, so the file is real code, not only a type check.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec

import onellm
from onellm import AskResult, Content, RequestOptions, Runtime, StreamEvent, StreamingAnswer, TextPart
from onellm.providers import ReasoningOptions, ToolChoice


@dataclass
class Invoice:
    customer: str
    total: Decimal


class Point(msgspec.Struct):
    x: int
    y: int


async def verbs() -> list[object]:
    text: str = await onellm.ask("gpt-6-luna", "Name three primes.")
    invoice: Invoice = await onellm.ask("gpt-6-luna", "Extract the invoice.", output=Invoice)
    point: Point = await onellm.ask("gpt-6-luna", "A point, please.", output=Point, system="Answer in JSON.")
    result: AskResult[Invoice] = await onellm.generate("gpt-6-luna", "Extract the invoice.", output=Invoice)
    value: Invoice | None = result.value
    plain: AskResult[Any] = await onellm.generate("gpt-6-luna", "Hi.")
    return [text, invoice, point, value, plain.text]


async def options() -> str:
    settings: RequestOptions = {"temperature": 0.2, "max_output_tokens": 200, "stop_sequences": ["\n\n"]}
    first = await onellm.ask("gpt-6-luna", "Hi.", **settings)
    second = await onellm.ask(
        "gpt-6-luna",
        "Hi.",
        reasoning=ReasoningOptions(effort="low"),
        tool_choice=ToolChoice("none"),
        top_p=None,
    )
    return first + second


async def content() -> str:
    parts: list[Content] = ["Summarize this:", TextPart("a short text")]
    return await onellm.ask("gpt-6-luna", *parts)


async def streams() -> str:
    pieces: list[str] = []
    answer: StreamingAnswer[Any] = onellm.stream("gpt-6-luna", "Write a haiku.")
    async with answer:
        async for event in answer:
            seen: StreamEvent = event
            match seen:
                case onellm.TextDelta(text=str(piece)):
                    pieces.append(piece)
                case onellm.Done(finish_reason=reason):
                    pieces.append(f"[{reason}]")
                case _:
                    pass
        result: AskResult[Any] = await answer.result()
    pieces.extend([piece async for piece in onellm.stream_text("gpt-6-luna", "Write a haiku.")])
    return "".join(pieces) + result.text


async def embeddings() -> tuple[list[float], list[list[float]]]:
    one: list[float] = await onellm.embed("embedding-small", "reset my password")
    many: list[list[float]] = await onellm.embed("embedding-small", ["a", "b"])
    return one, many


async def conversation() -> tuple[str, Invoice]:
    async with onellm.chat("gpt-6-luna", system="Be brief.", temperature=0.1) as chat:
        reply: str = await chat.ask("Name a prime.")
        typed: Invoice = await chat.ask("Now the invoice.", output=Invoice)
        turn: AskResult[Invoice] = await chat.send("Again.", output=Invoice)
    assert turn.value is not None
    return reply, typed


async def on_a_runtime(runtime: Runtime) -> tuple[str, Invoice]:
    text: str = await runtime.ask("gpt-6-luna", "Hi.", max_output_tokens=50)
    invoice: Invoice = await runtime.ask("gpt-6-luna", "Extract the invoice.", output=Invoice)
    return text, invoice


def blocking() -> tuple[str, Invoice, list[float], list[list[float]]]:
    text: str = onellm.ask_sync("gpt-6-luna", "Hi.")
    invoice: Invoice = onellm.ask_sync("gpt-6-luna", "Extract the invoice.", output=Invoice)
    result: AskResult[Invoice] = onellm.generate_sync("gpt-6-luna", "Extract the invoice.", output=Invoice)
    one: list[float] = onellm.embed_sync("embedding-small", "reset my password")
    many: list[list[float]] = onellm.embed_sync("embedding-small", ["a", "b"])
    assert result.value == invoice
    return text, invoice, one, many


def errors(data: object) -> str:
    try:
        onellm.schema.compile_type(Invoice).convert(data)
    except onellm.ArgumentError as error:
        where: str = error.path
        return where
    except onellm.OnellmError as error:
        return str(error)
    return ""


async def mistakes() -> None:
    """What mypy refuses (never run)."""
    wrong: int = await onellm.ask("gpt-6-luna", "Hi.")  # type: ignore[assignment]
    await onellm.ask("gpt-6-luna", "Hi.", temprature=0.2)  # type: ignore[call-overload]
    await onellm.ask("gpt-6-luna", "Hi.", max_output_tokens="many")  # type: ignore[call-overload]
    await onellm.ask("gpt-6-luna", 42)  # type: ignore[call-overload]
    typed: str = await onellm.ask("gpt-6-luna", "Extract the invoice.", output=Invoice)  # type: ignore[arg-type]
    del wrong, typed
