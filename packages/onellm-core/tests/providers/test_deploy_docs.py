"""The examples of docs/deployments.md run as written, in order, in one namespace, against mock clouds; what each
`print(...)` shows in its trailing comment is what it prints. Each deployment is shown in five lines."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from onellm.providers._http import ClientPool

from ._deploy import ACCESS_KEY, ACCESS_TOKEN, ACCOUNT_FILE, AZURE_KEY, ROOT, SECRET_KEY, TOKEN_URI

PAGE = ROOT / "docs" / "deployments.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
_SHOWN = re.compile(r"^\s*print\(.*\)\s+# (.+)$")

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hello there!"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 11, "output_tokens": 6},
}
GEMINI = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello there!"}]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3},
    "modelVersion": "gemini-2.5-flash",
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-5.4",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello there!", "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
}


def cloud(request: httpx.Request) -> httpx.Response:
    """Each cloud as the page's examples reach it, checking each is authorized as the page says."""
    url = str(request.url)
    if url == TOKEN_URI:
        return httpx.Response(200, json={"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})
    host = request.url.host
    if host == "bedrock-runtime.us-east-1.amazonaws.com":
        assert request.url.raw_path == b"/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
        assert request.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
        return httpx.Response(200, json=MESSAGE)
    if host.endswith("aiplatform.googleapis.com"):
        assert request.headers["authorization"] == f"Bearer {ACCESS_TOKEN}"
        if "/publishers/anthropic/" in url:
            assert url.endswith("/models/claude-sonnet-4-5@20250929:rawPredict")
            return httpx.Response(200, json=MESSAGE)
        assert url.endswith("/publishers/google/models/gemini-2.5-flash:generateContent")
        return httpx.Response(200, json=GEMINI)
    if host == "my-resource.openai.azure.com":
        assert url == "https://my-resource.openai.azure.com/openai/v1/responses"
        assert request.headers["api-key"] == AZURE_KEY
        return httpx.Response(200, json=RESPONSE)
    raise AssertionError(f"the examples reached {url}")


def test_each_deployment_is_shown_in_five_lines() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for heading in ("Amazon Bedrock", "Vertex AI: Claude", "Vertex AI: Gemini", "Azure OpenAI / Foundry"):
        section = text.split(f"## {heading}\n", 1)[1]
        block = re.search(r"```python\n(.*?)```", section, flags=re.S)
        assert block is not None
        assert len(block.group(1).strip().splitlines()) == 5, heading


def test_the_examples_run_and_print_what_they_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(ACCOUNT_FILE, tmp_path / "service-account.json")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    clients: list[httpx.AsyncClient] = []

    def mocked(self: ClientPool) -> httpx.AsyncClient:
        if not clients:
            clients.append(httpx.AsyncClient(transport=httpx.MockTransport(cloud)))
        return clients[0]

    monkeypatch.setattr(ClientPool, "get", mocked)
    assert len(BLOCKS) >= 6

    async def main() -> None:
        namespace: dict[str, Any] = {"__name__": "docs_example"}
        for index, text in enumerate(BLOCKS):
            source = textwrap.dedent(text)
            shown = [m.group(1).strip() for line in source.splitlines() if (m := _SHOWN.match(line))]
            code = compile(source, f"deployments.md[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                result = eval(code, namespace)
                if result is not None:
                    await result
            assert printed.getvalue().splitlines() == shown, f"block {index}"

    anyio.run(main)
