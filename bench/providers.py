"""Provider wire benchmarks: a request turn with a 1k, 50k or 200k-token history, a 2,000-event stream read to the end,
and the first text event of a 50-event stream (the connection is closed after it), per wire format, for onellm (a bare
provider call, and the same turn through `Runtime`), the vendor SDKs, litellm and a hand-written httpx + msgspec floor,
against one loopback mock server (bench/mock_server.mjs, started here; needs Node.js).

    uv sync --all-packages --all-groups
    uv run python bench/providers.py [--rounds 20] [--formats openai-chat anthropic] [--rows request-1k stream-2000]
    uv run python bench/providers.py --profile onellm-runtime anthropic request-200k   # where one cell's time goes

How it is kept fair:
- every client talks to the same mock server, with its own HTTP client, and does the same work per operation: send
  the conversation, read the answer, and hand back its text and usage;
- every operation's text and usage are checked against what the mock sent, outside the timed part; a client whose
  answer is wrong is reported, not timed;
- clients are interleaved in rounds: each round visits the clients in a fresh order and runs each client's cells in a
  fresh order, so drift, caches and garbage hit every client alike; the floor is measured in the same run;
- objects made during set-up and warm-up are moved out of the collector's way (`gc.freeze`), and the collector runs
  between clients, so one client's garbage is not collected on another's clock;
- peak allocation (tracemalloc) and new connections are taken per operation in a separate pass after the timing.

The tables give each cell's median wall time and its median CPU time in this process (the client's own work,
apart from the server's and the wait for it; steadier on a busy machine), each with its ratio to the floor; `onellm-runtime` is a chat turn through `Runtime` on a
conversation that already holds the history (a fresh instance each turn, priced and saved in a `MemoryInstanceStore`),
and its `turn/call` line is its ratio to onellm's bare provider call.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

HERE = Path(__file__).resolve().parent
ROWS = ("request-1k", "request-50k", "request-200k", "stream-2000", "first-event")
FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini")
KEY = "bench-key"
ANSWER = "Hello there."
INPUT_TOKENS = 1000


def history(tokens: int) -> list[tuple[str, str]]:
    """Alternating user/assistant turns holding about `tokens` tokens of English-like text (4 characters a token)."""
    turns = max(2, tokens // 2000)
    per_turn = tokens * 4 // turns
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    text = (sentence * (per_turn // len(sentence) + 1))[:per_turn]
    return [("user" if i % 2 == 0 else "assistant", f"{i}: {text}") for i in range(turns - 1)] + [("user", "Reply.")]


@dataclass(slots=True)
class Outcome:
    """What one operation read: the answer's text, its usage (None where the client could not read it), and how many
    text events arrived."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    events: int = 0


def expected(row: str) -> Outcome:
    if row.startswith("request-"):
        return Outcome(ANSWER, INPUT_TOKENS, 3, 1)
    if row == "stream-2000":
        return Outcome("".join(f"w{i} " for i in range(2000)), INPUT_TOKENS, 2000, 2000)
    return Outcome("w0 ", None, None, 1)


def check(row: str, got: Any) -> str | None:
    """Why an operation's answer is wrong, or None."""
    want = expected(row)
    if not isinstance(got, Outcome):
        return f"returned {type(got).__name__}, not an Outcome"
    if got.text != want.text:
        return f"text {got.text[:24]!r}... ({len(got.text)} chars), not the mock's ({len(want.text)} chars)"
    if got.events != want.events:
        return f"saw {got.events} text events, not {want.events}"
    if want.output_tokens is not None and (got.input_tokens, got.output_tokens) != (
        want.input_tokens,
        want.output_tokens,
    ):
        return f"usage {got.input_tokens}/{got.output_tokens}, not {want.input_tokens}/{want.output_tokens}"
    return None


# -- the floor: what a careful hand-written client does -----------------------------------------------------------


class Floor:
    name = "floor"
    formats = FORMATS

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = httpx.AsyncClient(timeout=60)
        self.encoder = msgspec.json.Encoder()

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        url, body, headers = self._build(fmt, turns, model, stream=False)
        response = await self.client.post(url, content=self.encoder.encode(body), headers=headers)
        data = msgspec.json.decode(response.content)
        if fmt == "openai-chat":
            usage = data["usage"]
            text = data["choices"][0]["message"]["content"]
            return Outcome(text, usage["prompt_tokens"], usage["completion_tokens"], 1)
        if fmt == "openai-responses":
            usage = data["usage"]
            text = data["output"][0]["content"][0]["text"]
            return Outcome(text, usage["input_tokens"], usage["output_tokens"], 1)
        if fmt == "anthropic":
            usage = data["usage"]
            return Outcome(data["content"][0]["text"], usage["input_tokens"], usage["output_tokens"], 1)
        usage = data["usageMetadata"]
        text = data["candidates"][0]["content"]["parts"][0]["text"]
        return Outcome(text, usage["promptTokenCount"], usage["candidatesTokenCount"], 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        url, body, headers = self._build(fmt, turns, model, stream=True)
        pieces: list[str] = []
        usage: list[int | None] = [None, None]
        decode = msgspec.json.decode
        async with self.client.stream("POST", url, content=self.encoder.encode(body), headers=headers) as response:
            rest = b""
            async for chunk in response.aiter_raw():
                data = rest + chunk if rest else chunk
                lines = data.split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if line[:6] != b"data: " or line[6:13] == b"[DONE]":
                        continue
                    text = self._read(fmt, decode(line[6:]), usage)
                    if text:
                        pieces.append(text)
                        if first_only:
                            return Outcome(text, None, None, 1)
        return Outcome("".join(pieces), usage[0], usage[1], len(pieces))

    @staticmethod
    def _read(fmt: str, event: dict[str, Any], usage: list[int | None]) -> str | None:
        """The text an event carries, and its usage into `usage`."""
        if fmt == "openai-chat":
            if event.get("usage"):
                usage[0], usage[1] = event["usage"]["prompt_tokens"], event["usage"]["completion_tokens"]
            choices = event.get("choices")
            return choices[0]["delta"].get("content") if choices else None
        if fmt == "openai-responses":
            kind = event.get("type")
            if kind == "response.output_text.delta":
                return str(event["delta"])
            if kind == "response.completed":
                found = event["response"]["usage"]
                usage[0], usage[1] = found["input_tokens"], found["output_tokens"]
            return None
        if fmt == "anthropic":
            kind = event.get("type")
            if kind == "content_block_delta":
                return str(event["delta"]["text"])
            if kind == "message_start":
                usage[0] = event["message"]["usage"]["input_tokens"]
            elif kind == "message_delta":
                usage[1] = event["usage"]["output_tokens"]
            return None
        meta = event.get("usageMetadata")
        if meta:
            usage[0], usage[1] = meta.get("promptTokenCount"), meta.get("candidatesTokenCount")
        candidates = event.get("candidates")
        return candidates[0]["content"]["parts"][0].get("text") if candidates else None

    def _build(
        self, fmt: str, turns: list[tuple[str, str]], model: str, *, stream: bool
    ) -> tuple[str, dict[str, Any], dict[str, str]]:
        if fmt == "openai-chat":
            body: dict[str, Any] = {"model": model, "messages": [{"role": r, "content": t} for r, t in turns]}
            if stream:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            return f"{self.base}/v1/chat/completions", body, {"authorization": f"Bearer {KEY}"}
        if fmt == "openai-responses":
            body = {
                "model": model,
                "store": False,
                "input": [{"role": r, "content": t} for r, t in turns],
                "stream": stream,
            }
            return f"{self.base}/v1/responses", body, {"authorization": f"Bearer {KEY}"}
        if fmt == "anthropic":
            body = {
                "model": model,
                "max_tokens": 1024,
                "messages": [{"role": r, "content": t} for r, t in turns],
                "stream": stream,
            }
            return f"{self.base}/v1/messages", body, {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        body = {"contents": [{"role": "user" if r == "user" else "model", "parts": [{"text": t}]} for r, t in turns]}
        verb = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{self.base}/v1beta/models/{model}:{verb}", body, {"x-goog-api-key": KEY}

    async def aclose(self) -> None:
        await self.client.aclose()


# -- peers ---------------------------------------------------------------------------------------------------------


class OpenAIPython:
    name = "openai-python"
    formats = ("openai-chat", "openai-responses")

    def __init__(self, base: str) -> None:
        import openai

        self.client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{base}/v1", max_retries=0)

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        if fmt == "openai-chat":
            r = await self.client.chat.completions.create(
                model=model,
                messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
            )
            assert r.usage is not None
            return Outcome(r.choices[0].message.content or "", r.usage.prompt_tokens, r.usage.completion_tokens, 1)
        rr = await self.client.responses.create(
            model=model,
            store=False,
            input=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
        )
        assert rr.usage is not None
        return Outcome(rr.output_text, rr.usage.input_tokens, rr.usage.output_tokens, 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        pieces: list[str] = []
        usage: tuple[int | None, int | None] = (None, None)
        if fmt == "openai-chat":
            s = await self.client.chat.completions.create(
                model=model,
                messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
                stream=True,
                stream_options={"include_usage": True},
            )
            async with s:
                async for chunk in s:
                    if chunk.usage is not None:
                        usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                    if chunk.choices and chunk.choices[0].delta.content:
                        pieces.append(chunk.choices[0].delta.content)
                        if first_only:
                            break
            return Outcome("".join(pieces), *usage, len(pieces))
        rs = await self.client.responses.create(
            model=model,
            store=False,
            input=[{"role": ro, "content": t} for ro, t in turns],
            stream=True,  # type: ignore[misc]
        )
        async with rs:
            async for event in rs:
                if event.type == "response.output_text.delta":
                    pieces.append(event.delta)
                    if first_only:
                        break
                elif event.type == "response.completed" and event.response.usage is not None:
                    usage = (event.response.usage.input_tokens, event.response.usage.output_tokens)
        return Outcome("".join(pieces), *usage, len(pieces))

    async def aclose(self) -> None:
        await self.client.close()


class AnthropicPython:
    name = "anthropic"
    formats = ("anthropic",)

    def __init__(self, base: str) -> None:
        import anthropic

        self.client = anthropic.AsyncAnthropic(api_key=KEY, base_url=base, max_retries=0)

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        r = await self.client.messages.create(
            model=model,
            max_tokens=1024,
            messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
        )
        return Outcome(r.content[0].text, r.usage.input_tokens, r.usage.output_tokens, 1)  # type: ignore[union-attr]

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        pieces: list[str] = []
        usage: list[int | None] = [None, None]
        s = await self.client.messages.create(
            model=model,
            max_tokens=1024,
            messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
            stream=True,
        )
        async with s:
            async for event in s:
                if event.type == "content_block_delta":
                    pieces.append(event.delta.text)  # type: ignore[union-attr]
                    if first_only:
                        break
                elif event.type == "message_start":
                    usage[0] = event.message.usage.input_tokens
                elif event.type == "message_delta":
                    usage[1] = event.usage.output_tokens
        return Outcome("".join(pieces), usage[0], usage[1], len(pieces))

    async def aclose(self) -> None:
        await self.client.close()


class GoogleGenai:
    name = "google-genai"
    formats = ("gemini",)

    def __init__(self, base: str) -> None:
        from google import genai
        from google.genai import types

        self.types = types
        self.client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=base, api_version="v1beta"))

    def _contents(self, turns: list[tuple[str, str]]) -> list[Any]:
        t = self.types
        return [t.Content(role="user" if r == "user" else "model", parts=[t.Part(text=x)]) for r, x in turns]

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        r = await self.client.aio.models.generate_content(model=model, contents=self._contents(turns))
        meta = r.usage_metadata
        assert meta is not None
        return Outcome(r.text or "", meta.prompt_token_count, meta.candidates_token_count, 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        pieces: list[str] = []
        usage: tuple[int | None, int | None] = (None, None)
        s = await self.client.aio.models.generate_content_stream(model=model, contents=self._contents(turns))
        async for chunk in s:
            if chunk.usage_metadata is not None:
                usage = (chunk.usage_metadata.prompt_token_count, chunk.usage_metadata.candidates_token_count)
            if chunk.text:
                pieces.append(chunk.text)
                if first_only:
                    await s.aclose()
                    break
        return Outcome("".join(pieces), *usage, len(pieces))

    async def aclose(self) -> None:
        await self.client.aio.aclose()


class LiteLLM:
    name = "litellm"
    formats = FORMATS

    def __init__(self, base: str) -> None:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no download of the price table
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True
        self.litellm = litellm
        self.base = base

    def _args(self, fmt: str, turns: list[tuple[str, str]], model: str) -> dict[str, Any]:
        messages = [{"role": r, "content": t} for r, t in turns]
        if fmt == "openai-chat":
            return {"model": f"openai/{model}", "api_base": f"{self.base}/v1", "messages": messages}
        if fmt == "openai-responses":
            return {"model": f"openai/{model}", "api_base": f"{self.base}/v1", "input": messages}
        if fmt == "anthropic":
            return {"model": f"anthropic/{model}", "api_base": self.base, "messages": messages, "max_tokens": 1024}
        return {"model": f"gemini/{model}", "api_base": self.base, "messages": messages}

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> Outcome:
        args = self._args(fmt, turns, model)
        if fmt == "openai-responses":
            r = await self.litellm.aresponses(api_key=KEY, store=False, **args)
            return Outcome(str(r.output[0].content[0].text), r.usage.input_tokens, r.usage.output_tokens, 1)
        r = await self.litellm.acompletion(api_key=KEY, **args)
        return Outcome(str(r.choices[0].message.content), r.usage.prompt_tokens, r.usage.completion_tokens, 1)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> Outcome:
        args = self._args(fmt, turns, model)
        pieces: list[str] = []
        usage: tuple[int | None, int | None] = (None, None)
        if fmt == "openai-responses":
            s = await self.litellm.aresponses(api_key=KEY, store=False, stream=True, **args)
            async for event in s:
                kind = getattr(event, "type", "")
                if kind == "response.output_text.delta":
                    pieces.append(event.delta)
                    if first_only:
                        break
                elif kind == "response.completed" and getattr(event.response, "usage", None) is not None:
                    usage = (event.response.usage.input_tokens, event.response.usage.output_tokens)
            return Outcome("".join(pieces), *usage, len(pieces))
        s = await self.litellm.acompletion(api_key=KEY, stream=True, stream_options={"include_usage": True}, **args)
        async for chunk in s:
            found = getattr(chunk, "usage", None)
            if found is not None:
                usage = (found.prompt_tokens, found.completion_tokens)
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
                if first_only:
                    break
        return Outcome("".join(pieces), *usage, len(pieces))

    async def aclose(self) -> None:
        return None


PEERS: list[tuple[str, type[Any]]] = [
    ("openai", OpenAIPython),
    ("anthropic", AnthropicPython),
    ("google.genai", GoogleGenai),
    ("litellm", LiteLLM),
]


# -- harness -------------------------------------------------------------------------------------------------------


@dataclass
class Cell:
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    """This process's CPU time per operation: the client's own work, without the server's or the wait for it."""
    error: str | None = None
    peak: int | None = None
    """Peak bytes allocated during one operation (tracemalloc), above what was allocated before it."""
    connections: float | None = None
    """New connections the mock server saw per operation."""


class Server:
    """The mock server, and a count of the connections it accepted."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(HERE / "mock_server.mjs"), "0"], stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening "):
            self.process.kill()
            raise SystemExit(f"mock server did not start: {line!r}")
        self.base = f"http://127.0.0.1:{line.split()[1]}"
        self._stats = httpx.Client()  # one keep-alive connection, counted once

    def connections(self) -> int:
        return int(self._stats.get(f"{self.base}/__connections").json()["connections"])

    def close(self) -> None:
        self._stats.close()
        self.process.kill()


Operation = Callable[[], Awaitable[Outcome]]


def operation(client: Any, fmt: str, row: str, histories: dict[str, list[tuple[str, str]]]) -> Operation:
    model = {"gemini": "gemini-mock"}.get(fmt, "mock-model")
    if row.startswith("request-"):
        turns = histories[row.split("-")[1]]
        return lambda: client.request(fmt, turns, model)
    short = histories["short"]
    if row == "stream-2000":
        return lambda: client.stream(fmt, short, f"{model}-events-2000", first_only=False)
    return lambda: client.stream(fmt, short, f"{model}-events-50", first_only=True)


def histories() -> dict[str, list[tuple[str, str]]]:
    return {"1k": history(1000), "50k": history(50_000), "200k": history(200_000), "short": history(100)}


async def measure(
    clients: list[Any], formats: list[str], rows: list[str], rounds: int, server: Server, seed: int
) -> dict[tuple[str, str, str], Cell]:
    shared = histories()
    cells: dict[tuple[str, str, str], Cell] = {}
    plans: dict[str, list[tuple[tuple[str, str, str], Operation]]] = {}
    for client in clients:
        plan = plans[client.name] = []
        for fmt in formats:
            if fmt not in client.formats:
                continue
            for row in rows:
                key = (fmt, row, client.name)
                cell = cells[key] = Cell()
                run = operation(client, fmt, row, shared)
                try:  # warm up: connections, caches, lazy imports; and the answer must be right
                    for _ in range(3):
                        cell.error = check(row, await run())
                except Exception as error:  # a peer that cannot do this row is reported, not fatal
                    cell.error = f"{type(error).__name__}: {error}"[:100]
                if cell.error is None:
                    plan.append((key, run))
    gc.collect()
    gc.freeze()  # what set-up and warm-up made is not garbage: keep it out of every client's collections
    rng = random.Random(seed)
    order = list(clients)
    for number in range(rounds):
        rng.shuffle(order)
        for client in order:
            plan = plans[client.name]
            rng.shuffle(plan)
            gc.collect()
            for key, run in plan:
                cell = cells[key]
                if cell.error:
                    continue
                started_cpu = time.process_time()
                started = time.perf_counter()
                outcome = await run()
                elapsed = time.perf_counter() - started
                cell.cpu.append(time.process_time() - started_cpu)
                cell.error = check(key[1], outcome)
                cell.samples.append(elapsed)
        print(f"\rround {number + 1}/{rounds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    gc.unfreeze()
    await footprint(clients, plans, cells, server)
    return cells


async def footprint(
    clients: list[Any],
    plans: dict[str, list[tuple[tuple[str, str, str], Operation]]],
    cells: dict[tuple[str, str, str], Cell],
    server: Server,
    repeat: int = 3,
) -> None:
    """Peak allocation of one operation (the least of `repeat`) and new connections per operation, per cell."""
    for client in clients:
        for key, run in plans[client.name]:
            cell = cells[key]
            if cell.error:
                continue
            await run()  # settle: a connection the previous cell cut is not counted here
            before = server.connections()
            for _ in range(repeat):
                await run()
            cell.connections = (server.connections() - before) / repeat
            peaks = []
            gc.collect()
            tracemalloc.start()
            try:
                for _ in range(repeat):
                    tracemalloc.reset_peak()
                    base, _ = tracemalloc.get_traced_memory()
                    await run()
                    _, peak = tracemalloc.get_traced_memory()
                    peaks.append(peak - base)
            finally:
                tracemalloc.stop()
            cell.peak = min(peaks)


def show(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def show_bytes(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"


def median(cell: Cell | None, cpu: bool = False) -> float | None:
    if cell is None or not cell.samples or cell.error:
        return None
    return statistics.median(cell.cpu if cpu else cell.samples)


def table(
    cells: dict[tuple[str, str, str], Cell], formats: list[str], rows: list[str], names: list[str], *, cpu: bool = False
) -> str:
    lines = ["| format | client | " + " | ".join(rows) + " |", "|---|---|" + "---:|" * len(rows)]
    for fmt in formats:
        for name in names:
            if not any((fmt, row, name) in cells for row in rows):
                continue
            out = []
            for row in rows:
                cell = cells.get((fmt, row, name))
                floor = median(cells.get((fmt, row, "floor")), cpu)
                value = median(cell, cpu)
                if cell is None:
                    out.append("")
                elif cell.error:
                    out.append(f"error ({cell.error})")
                elif value is not None:
                    ratio = value / floor if floor else float("nan")
                    out.append(f"{show(value)} ({ratio:.2f}×)")
                else:
                    out.append("")
            lines.append(f"| {fmt} | {name} | " + " | ".join(out) + " |")
            if name == "onellm-runtime":
                out = []
                for row in rows:
                    turn = median(cells.get((fmt, row, name)), cpu)
                    call = median(cells.get((fmt, row, "onellm")), cpu)
                    out.append(f"{turn / call:.2f}×" if turn and call else "")
                lines.append(f"| {fmt} | runtime turn / provider call | " + " | ".join(out) + " |")
    return "\n".join(lines)


def memory_table(cells: dict[tuple[str, str, str], Cell], formats: list[str], rows: list[str], names: list[str]) -> str:
    lines = [
        "Peak allocation per operation (tracemalloc; ratio to the floor) and new connections per operation:",
        "",
        "| format | client | " + " | ".join(rows) + " |",
        "|---|---|" + "---:|" * len(rows),
    ]
    for fmt in formats:
        for name in names:
            if not any((fmt, row, name) in cells for row in rows):
                continue
            out = []
            for row in rows:
                cell = cells.get((fmt, row, name))
                floor = cells.get((fmt, row, "floor"))
                if cell is None or cell.peak is None:
                    out.append("")
                    continue
                ratio = cell.peak / floor.peak if floor is not None and floor.peak else float("nan")
                out.append(f"{show_bytes(cell.peak)} ({ratio:.2f}×), {cell.connections:.2f} conn")
            lines.append(f"| {fmt} | {name} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def onellm_clients(base: str) -> list[Any]:
    """onellm's own clients: the bare provider call, and the same turn through `Runtime`."""
    from bench_onellm import OnellmClient, OnellmRuntimeClient

    return [OnellmClient(base), OnellmRuntimeClient(base)]


def make_clients(base: str, only: list[str] | None) -> list[Any]:
    clients: list[Any] = [Floor(base), *onellm_clients(base)]
    for module, cls in PEERS:
        if only is not None and cls.name not in only:
            continue
        if importlib.util.find_spec(module.split(".")[0]) is None:
            print(f"({module} not installed: skipped)", file=sys.stderr)
            continue
        clients.append(cls(base))
    if only is not None:
        clients = [c for c in clients if c.name in only or c.name == "floor"]
    return clients


async def main_async(args: argparse.Namespace) -> None:
    server = Server()
    try:
        clients = make_clients(server.base, args.clients)
        if args.profile:
            await profile(clients, *args.profile, number=args.number)
        else:
            cells = await measure(clients, args.formats, args.rows, args.rounds, server, args.seed)
            names = [c.name for c in clients]
            print("Wall time per operation, median (ratio to the floor):\n")
            print(table(cells, args.formats, args.rows, names))
            print("\nCPU time of this process per operation, median (ratio to the floor): the client's own work\n")
            print(table(cells, args.formats, args.rows, names, cpu=True))
            print()
            print(memory_table(cells, args.formats, args.rows, names))
        for client in clients:
            await client.aclose()
    finally:
        server.close()


async def profile(clients: list[Any], name: str, fmt: str, row: str, *, number: int) -> None:
    """Run one cell `number` times under pyinstrument (cProfile when it is not installed) and print where the time
    goes."""
    client = next((c for c in clients if c.name == name), None)
    if client is None:
        raise SystemExit(f"no client {name!r}: {[c.name for c in clients]}")
    run = operation(client, fmt, row, histories())
    for _ in range(3):
        problem = check(row, await run())
        if problem:
            raise SystemExit(f"{name} {fmt} {row}: {problem}")
    gc.collect()
    gc.freeze()
    try:
        from pyinstrument import Profiler
    except ImportError:
        Profiler = None
    started = time.perf_counter()
    if Profiler is not None:
        profiler = Profiler(interval=0.0001, async_mode="disabled")
        profiler.start()
        for _ in range(number):
            await run()
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    else:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(number):
            await run()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
    print(f"{name} {fmt} {row}: {show((time.perf_counter() - started) / number)} per operation under the profiler")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--formats", nargs="*", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=ROWS)
    parser.add_argument("--clients", nargs="*", default=None, help="only these clients (the floor always runs)")
    parser.add_argument("--profile", nargs=3, metavar=("CLIENT", "FORMAT", "ROW"), default=None)
    parser.add_argument("--number", type=int, default=200, help="operations to profile")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    sys.modules.setdefault("providers", sys.modules[__name__])  # bench_onellm imports its helpers from here
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
