"""Provider wire benchmarks: a request turn with a 1k, 50k or 200k-token history, a 2,000-event stream read to the end,
and the first text event of a 50-event stream (the connection is closed after it), per wire format, for onellm, the
vendor SDKs, litellm and a hand-written httpx + msgspec floor, against one loopback mock server (bench/mock_server.mjs,
started here; needs Node.js). Clients are interleaved round by round so drift hits all of them alike; the table gives
each median and its ratio to the floor.

    uv sync --all-packages --all-groups
    uv run python bench/providers.py [--rounds 30] [--formats openai-chat anthropic] [--rows request-1k stream-2000]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import sys
import time
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


def history(tokens: int) -> list[tuple[str, str]]:
    """Alternating user/assistant turns holding about `tokens` tokens of English-like text (4 characters a token)."""
    turns = max(2, tokens // 2000)
    per_turn = tokens * 4 // turns
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    text = (sentence * (per_turn // len(sentence) + 1))[:per_turn]
    return [("user" if i % 2 == 0 else "assistant", f"{i}: {text}") for i in range(turns - 1)] + [("user", "Reply.")]


# -- the floor: what a careful hand-written client does -----------------------------------------------------------


class Floor:
    name = "floor"

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = httpx.AsyncClient(timeout=60)
        self.encoder = msgspec.json.Encoder()

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> str:
        url, body, headers = self._build(fmt, turns, model, stream=False)
        response = await self.client.post(url, content=self.encoder.encode(body), headers=headers)
        data = msgspec.json.decode(response.content)
        if fmt == "openai-chat":
            return str(data["choices"][0]["message"]["content"])
        if fmt == "openai-responses":
            return str(data["output"][0]["content"][0]["text"])
        if fmt == "anthropic":
            return str(data["content"][0]["text"])
        return str(data["candidates"][0]["content"]["parts"][0]["text"])

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> int:
        url, body, headers = self._build(fmt, turns, model, stream=True)
        count = 0
        async with self.client.stream("POST", url, content=self.encoder.encode(body), headers=headers) as response:
            rest = b""
            async for chunk in response.aiter_raw():
                data = rest + chunk if rest else chunk
                lines = data.split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if line[:6] == b"data: " and line[6:13] != b"[DONE]":
                        event = msgspec.json.decode(line[6:])
                        if self._is_text(fmt, event):
                            count += 1
                            if first_only:
                                return count
        return count

    @staticmethod
    def _is_text(fmt: str, event: dict[str, Any]) -> bool:
        if fmt == "openai-chat":
            choices = event.get("choices") or []
            return bool(choices and choices[0].get("delta", {}).get("content"))
        if fmt == "openai-responses":
            return event.get("type") == "response.output_text.delta"
        if fmt == "anthropic":
            return event.get("type") == "content_block_delta"
        return bool(event.get("candidates"))

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

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> str:
        if fmt == "openai-chat":
            r = await self.client.chat.completions.create(
                model=model,
                messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
            )
            return r.choices[0].message.content or ""
        rr = await self.client.responses.create(
            model=model,
            store=False,
            input=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
        )
        return rr.output_text

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> int:
        count = 0
        if fmt == "openai-chat":
            s = await self.client.chat.completions.create(
                model=model,
                messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
                stream=True,
                stream_options={"include_usage": True},
            )
            async with s:
                async for chunk in s:
                    if chunk.choices and chunk.choices[0].delta.content:
                        count += 1
                        if first_only:
                            break
            return count
        rs = await self.client.responses.create(
            model=model,
            store=False,
            input=[{"role": ro, "content": t} for ro, t in turns],
            stream=True,  # type: ignore[misc]
        )
        async with rs:
            async for event in rs:
                if event.type == "response.output_text.delta":
                    count += 1
                    if first_only:
                        break
        return count

    async def aclose(self) -> None:
        await self.client.close()


class AnthropicPython:
    name = "anthropic"
    formats = ("anthropic",)

    def __init__(self, base: str) -> None:
        import anthropic

        self.client = anthropic.AsyncAnthropic(api_key=KEY, base_url=base, max_retries=0)

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> str:
        r = await self.client.messages.create(
            model=model,
            max_tokens=1024,
            messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
        )
        return r.content[0].text  # type: ignore[union-attr]

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> int:
        count = 0
        s = await self.client.messages.create(
            model=model,
            max_tokens=1024,
            messages=[{"role": ro, "content": t} for ro, t in turns],  # type: ignore[misc]
            stream=True,
        )
        async with s:
            async for event in s:
                if event.type == "content_block_delta":
                    count += 1
                    if first_only:
                        break
        return count

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

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> str:
        r = await self.client.aio.models.generate_content(model=model, contents=self._contents(turns))
        return r.text or ""

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> int:
        count = 0
        s = await self.client.aio.models.generate_content_stream(model=model, contents=self._contents(turns))
        async for chunk in s:
            if chunk.text:
                count += 1
                if first_only:
                    await s.aclose()
                    break
        return count

    async def aclose(self) -> None:
        await self.client.aio.aclose()


class LiteLLM:
    name = "litellm"
    formats = FORMATS

    def __init__(self, base: str) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
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

    async def request(self, fmt: str, turns: list[tuple[str, str]], model: str) -> str:
        args = self._args(fmt, turns, model)
        if fmt == "openai-responses":
            r = await self.litellm.aresponses(api_key=KEY, store=False, **args)
            return str(r.output[0].content[0].text)
        r = await self.litellm.acompletion(api_key=KEY, **args)
        return str(r.choices[0].message.content)

    async def stream(self, fmt: str, turns: list[tuple[str, str]], model: str, *, first_only: bool) -> int:
        args = self._args(fmt, turns, model)
        count = 0
        if fmt == "openai-responses":
            s = await self.litellm.aresponses(api_key=KEY, store=False, stream=True, **args)
            async for event in s:
                if getattr(event, "type", "") == "response.output_text.delta":
                    count += 1
                    if first_only:
                        break
            return count
        s = await self.litellm.acompletion(api_key=KEY, stream=True, **args)
        async for chunk in s:
            if chunk.choices and chunk.choices[0].delta.content:
                count += 1
                if first_only:
                    break
        return count

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
    error: str | None = None


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        ["node", str(HERE / "mock_server.mjs"), "0"], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening "):
        process.kill()
        raise SystemExit(f"mock server did not start: {line!r}")
    return process, f"http://127.0.0.1:{line.split()[1]}"


def operation(
    client: Any, fmt: str, row: str, histories: dict[str, list[tuple[str, str]]]
) -> Callable[[], Awaitable[Any]]:
    model = {"gemini": "gemini-mock"}.get(fmt, "mock-model")
    if row.startswith("request-"):
        turns = histories[row.split("-")[1]]
        return lambda: client.request(fmt, turns, model)
    short = histories["short"]
    if row == "stream-2000":
        return lambda: client.stream(fmt, short, f"{model}-events-2000", first_only=False)
    return lambda: client.stream(fmt, short, f"{model}-events-50", first_only=True)


async def measure(
    clients: list[Any], formats: list[str], rows: list[str], rounds: int
) -> dict[tuple[str, str, str], Cell]:
    histories = {"1k": history(1000), "50k": history(50_000), "200k": history(200_000), "short": history(100)}
    cells: dict[tuple[str, str, str], Cell] = {}
    for fmt in formats:
        for row in rows:
            runners = [(c, operation(c, fmt, row, histories)) for c in clients if fmt in c.formats]
            for client, run in runners:  # warm up: connections, caches, lazy imports
                cell = cells.setdefault((fmt, row, client.name), Cell())
                try:
                    for _ in range(3):
                        result = await run()
                    if row == "stream-2000" and result != 2000:
                        cell.error = f"saw {result} text events, not 2000"
                except Exception as error:  # a peer that cannot do this row is reported, not fatal
                    cell.error = f"{type(error).__name__}: {error}"[:80]
            for _ in range(rounds):
                for client, run in runners:
                    cell = cells[(fmt, row, client.name)]
                    if cell.error:
                        continue
                    started = time.perf_counter()
                    await run()
                    cell.samples.append(time.perf_counter() - started)
    return cells


def show(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def table(cells: dict[tuple[str, str, str], Cell], formats: list[str], rows: list[str], names: list[str]) -> str:
    lines = ["| format | client | " + " | ".join(rows) + " |", "|---|---|" + "---:|" * len(rows)]
    for fmt in formats:
        for name in names:
            if not any((fmt, row, name) in cells for row in rows):
                continue
            out = []
            for row in rows:
                cell = cells.get((fmt, row, name))
                floor = cells.get((fmt, row, "floor"))
                if cell is None or (not cell.samples and not cell.error):
                    out.append("")
                elif cell.error:
                    out.append(f"error ({cell.error})")
                else:
                    median = statistics.median(cell.samples)
                    ratio = median / statistics.median(floor.samples) if floor and floor.samples else float("nan")
                    out.append(f"{show(median)} ({ratio:.2f}×)")
            lines.append(f"| {fmt} | {name} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def onellm_clients(base: str) -> list[Any]:
    """onellm's own providers, when importable."""
    try:
        from bench_onellm import OnellmClient  # type: ignore[import-not-found]
    except ImportError:
        return []
    return [OnellmClient(base)]


async def main_async(args: argparse.Namespace) -> None:
    server, base = start_server()
    try:
        floor = Floor(base)
        floor.formats = FORMATS  # type: ignore[attr-defined]
        clients: list[Any] = [floor, *onellm_clients(base)]
        for module, cls in PEERS:
            if importlib.util.find_spec(module.split(".")[0]) is None:
                print(f"({module} not installed: skipped)")
                continue
            clients.append(cls(base))
        cells = await measure(clients, args.formats, args.rows, args.rounds)
        print(table(cells, args.formats, args.rows, [c.name for c in clients]))
        for client in clients:
            await client.aclose()
    finally:
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--formats", nargs="*", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=ROWS)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
