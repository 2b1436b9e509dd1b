"""The same cases through the async verbs and their blocking twins: equal results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

import onellm
from onellm import Runtime
from onellm.instances import MemoryInstanceStore
from onellm.testing import ScriptedProvider, ScriptStep


@dataclass
class Invoice:
    customer: str
    total: Decimal


FLOW = 'model: gpt-6-luna\ninitialPrompts:\n  - user:\n      - text: "{{ .inputs.x }}"\n'


def _case_ask(sync: bool, _: Path) -> Any:
    if sync:
        return onellm.ask_sync("gpt-6-luna", "x")
    return anyio.run(lambda: onellm.ask("gpt-6-luna", "x"))


def _case_output(sync: bool, _: Path) -> Any:
    if sync:
        return onellm.ask_sync("gpt-6-luna", "x", output=Invoice)
    return anyio.run(lambda: onellm.ask("gpt-6-luna", "x", output=Invoice))


def _case_generate(sync: bool, _: Path) -> Any:
    r = onellm.generate_sync("gpt-6-luna", "x") if sync else anyio.run(lambda: onellm.generate("gpt-6-luna", "x"))
    return (r.text, r.cost, r.finish, r.message.assistant)


def _case_stream_text(sync: bool, _: Path) -> Any:
    if sync:
        return list(onellm.stream_text_sync("gpt-6-luna", "x"))

    async def collect() -> list[str]:
        return [p async for p in onellm.stream_text("gpt-6-luna", "x")]

    return anyio.run(collect)


def _case_embed(sync: bool, _: Path) -> Any:
    if sync:
        return onellm.embed_sync("embedding-small", ["a", "b"])
    return anyio.run(lambda: onellm.embed("embedding-small", ["a", "b"]))


def _case_script(sync: bool, folder: Path) -> Any:
    flow = folder / "p.flow"
    flow.write_text(FLOW, encoding="utf-8")
    if sync:
        r = onellm.run_script_sync(flow, {"x": "hi"})
    else:
        r = anyio.run(lambda: onellm.run_script(flow, {"x": "hi"}))
    return (r.text, r.cost, len(r.turns))


ANSWERS = {
    "ask": ScriptStep.text_with_usage("2, 3 and 5.", 13, 7),
    "output": ScriptStep.text('{"customer": "ACME Ltd", "total": 120.50}'),
    "generate": ScriptStep.text_with_usage(["2, 3 ", "and 5."], 13, 7),
    "stream_text": ScriptStep.text("a", "b", "c"),
    "embed": None,
    "script": ScriptStep.text_with_usage("hello", 3, 1),
}
CASES: dict[str, Callable[[bool, Path], Any]] = {
    "ask": _case_ask,
    "output": _case_output,
    "generate": _case_generate,
    "stream_text": _case_stream_text,
    "embed": _case_embed,
    "script": _case_script,
}


@pytest.mark.parametrize("name", list(CASES))
def test_async_and_sync_forms_agree(name: str, tmp_path: Path) -> None:
    results = []
    for sync in (False, True):
        provider = ScriptedProvider("openai")
        step = ANSWERS[name]
        if step is not None:
            provider.enqueue(step)
        runtime = Runtime(store=MemoryInstanceStore(), environ={})
        runtime.providers.set("openai", provider)
        with onellm.use_runtime(runtime):
            results.append(CASES[name](sync, tmp_path))
        provider.assert_complete()
    assert results[0] == results[1]


def test_an_interrupt_reaches_the_caller_and_the_loop_survives() -> None:
    import signal
    import threading

    from onellm.runtime._sync import drive

    async def interrupted() -> None:
        raise KeyboardInterrupt

    async def fine() -> str:
        return "ok"

    with pytest.raises(KeyboardInterrupt):
        drive(interrupted(), "ask")
    assert drive(fine(), "ask") == "ok"

    cleaned: list[str] = []
    main = threading.main_thread().ident
    assert main == threading.get_ident()

    def ctrl_c() -> None:  # Ctrl-C: SIGINT to the main thread, which waits for the call
        assert main is not None
        signal.pthread_kill(main, signal.SIGINT)

    async def long_call() -> None:
        import asyncio

        asyncio.get_running_loop().call_later(0.05, ctrl_c)
        try:
            await anyio.sleep(10)
        finally:
            cleaned.append("cleanup ran")

    # Python's own Ctrl-C handler, also when the tests were started with SIGINT ignored (a background job of a shell)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            drive(long_call(), "ask")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert cleaned == ["cleanup ran"]
    assert drive(fine(), "ask") == "ok"
