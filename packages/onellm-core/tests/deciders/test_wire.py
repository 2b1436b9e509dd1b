"""The TypeSafe Jev and OpenAI Decisions wire clients, end to end: a decider run through the real provider over
`httpx.MockTransport`, the body sent compared byte for byte with the case's `request.json`, the answer read from its
`response.json` compared with `answers.json` (`testdata/providers/typesafe/`, `testdata/providers/openai-decisions/`;
their SOURCE.md says what the shapes were written from)."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from onellm import Asset, Runtime
from onellm.errors import AuthError, MalformedResponseError, RefusedError
from onellm.providers.openai import OpenAIProvider
from onellm.providers.typesafe import JevProvider

TESTDATA = Path(__file__).resolve().parents[4] / "testdata" / "providers"
KEY = "sk-decisions-test-key-0123456789"
UPDATE = bool(os.environ.get("ONELLM_UPDATE_FIXTURES"))
CASES = sorted(
    (protocol, case.name)
    for protocol in ("typesafe", "openai-decisions")
    for case in (TESTDATA / protocol).iterdir()
    if case.is_dir()
)


def _runtime(
    protocol: str, case: Path, sent: list[httpx.Request], status: int = 200, body: bytes | None = None
) -> Runtime:
    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        content = body if body is not None else (case / "response.json").read_bytes()
        return httpx.Response(status, content=content, headers={"content-type": "application/json"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    runtime = Runtime(environ={})
    if protocol == "typesafe":
        runtime.providers.set("typesafe", JevProvider(api_key=KEY, http_client=client))
    else:
        runtime.providers.set("openai", OpenAIProvider(api_key=KEY, http_client=client))
    return runtime


def _inputs(case: Path) -> dict[str, Any]:
    inputs: dict[str, Any] = json.loads((case / "inputs.json").read_text(encoding="utf-8"))
    if (case / "photo.png").is_file():
        inputs["photo"] = Asset.from_bytes((case / "photo.png").read_bytes(), "image/png", name="photo.png")
    return inputs


@pytest.mark.anyio
@pytest.mark.parametrize(("protocol", "name"), [c for c in CASES if c[1] != "refusal"], ids=lambda v: str(v))
async def test_case_sends_its_bytes_and_reads_its_answers(protocol: str, name: str) -> None:
    case = TESTDATA / protocol / name
    sent: list[httpx.Request] = []
    runtime = _runtime(protocol, case, sent)
    result = await runtime.decide(case, _inputs(case))
    assert len(sent) == 1
    request = sent[0]
    assert request.method == "POST"
    assert request.url.path == ("/v1/systemone" if protocol == "typesafe" else "/v1/decisions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    if UPDATE:
        (case / "request.json").write_bytes(request.content)
        (case / "answers.json").write_text(json.dumps(result.answers, indent=2) + "\n", encoding="utf-8")
    assert request.content == (case / "request.json").read_bytes()
    assert result.answers == json.loads((case / "answers.json").read_text(encoding="utf-8"))
    assert result.engine == ("jev" if protocol == "typesafe" else "openai-decisions")
    assert result.instance.state == "stopped"


@pytest.mark.anyio
async def test_jev_prices_input_tokens_only() -> None:
    case = TESTDATA / "typesafe" / "triage-basic"
    result = await _runtime("typesafe", case, []).decide(case, _inputs(case))
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (318, 34)
    assert [(line.counter, line.quantity, line.amount) for line in result.cost.lines] == [
        ("inputTokens", 318, Decimal("0.000013356"))
    ]
    assert result.cost.total == Decimal("0.000013356") == result.calls[0].cost


@pytest.mark.anyio
async def test_openai_decisions_prices_uncached_input_cache_reads_and_writes_not_output() -> None:
    from onellm.catalog import Catalog

    case = TESTDATA / "openai-decisions" / "triage-cache"
    runtime = _runtime("openai-decisions", case, [])
    runtime.catalog = Catalog.shipped().with_layers(
        {
            "name": "openai",
            "models": [
                {
                    "name": "openai-decisions",
                    "pricing": {
                        "inputPerMillion": "0.10",
                        "cacheReadPerMillion": "0.01",
                        "cacheCreationPerMillion": "0.125",
                        "outputPerMillion": "5",
                        "asOf": "2026-11-20",
                    },
                }
            ],
        }
    )
    result = await runtime.decide(case, _inputs(case))
    assert result.usage is not None
    # input_tokens 1400 counts 1024 cache reads and 128 cache writes: 248 are uncached.
    assert (
        result.usage.input_tokens,
        result.usage.cache_read_input_tokens,
        result.usage.cache_creation_input_tokens,
        result.usage.output_tokens,
    ) == (248, 1024, 128, 9)
    lines = {line.counter: line.amount for line in result.cost.lines}
    assert lines == {
        "inputTokens": Decimal("0.0000248"),
        "cacheReadInputTokens": Decimal("0.00001024"),
        "cacheCreationInputTokens": Decimal("0.000016"),
    }
    assert result.cost.total == Decimal("0.00005104")


@pytest.mark.anyio
async def test_openai_decisions_unpriced_in_the_shipped_catalog_is_said_so() -> None:
    case = TESTDATA / "openai-decisions" / "triage-cache"
    result = await _runtime("openai-decisions", case, []).decide(case, _inputs(case))
    assert result.cost.priced is False
    assert result.calls[0].cost is None


@pytest.mark.anyio
async def test_openai_refusal_is_a_refused_error_naming_the_questions_and_the_call_is_kept() -> None:
    case = TESTDATA / "openai-decisions" / "refusal"
    runtime = _runtime("openai-decisions", case, [])
    with pytest.raises(RefusedError) as caught:
        await runtime.decide(case, _inputs(case))
    assert caught.value.questions == ("damaged",)
    assert "damaged" in str(caught.value)
    [summary] = await runtime.list_decisions()
    stored = await runtime.get_decision(summary.instance_id)
    assert stored is not None
    assert stored.instance.state == "error"
    assert stored.instance.error is not None
    assert stored.instance.error.type == "RefusedError"
    assert [c.questions for c in stored.calls] == [("damaged",)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"not json", "not valid JSON"),
        (b'{"answers": []}', "no answers object"),
        (b'{"answers": {"topic": {"type": "choice", "choice": "billing", "confidence": 2}}}', "outside"),
        (b'{"answers": {"angry": {"type": "noul", "noul": "high"}}}', "not a number"),
        (b'{"answers": {"angry": {"type": "vote"}}}', "unknown type"),
        (b'{"answers": {}, "usage": {"input_tokens": -3}}', "not a token count"),
    ],
)
async def test_a_malformed_jev_answer_is_malformed_response_error(body: bytes, problem: str) -> None:
    case = TESTDATA / "typesafe" / "triage-basic"
    runtime = _runtime("typesafe", case, [], body=body)
    with pytest.raises(MalformedResponseError, match=problem):
        await runtime.decide(case, _inputs(case))


@pytest.mark.anyio
async def test_an_engine_answering_fewer_questions_names_the_missing_ones() -> None:
    case = TESTDATA / "typesafe" / "triage-basic"
    body = b'{"answers": {"topic": {"type": "choice", "choice": "billing", "confidence": 0.9, "probabilities": {}}}}'
    runtime = _runtime("typesafe", case, [], body=body)
    with pytest.raises(MalformedResponseError, match=r"answered 1 of 2 questions; no answer to: angry"):
        await runtime.decide(case, _inputs(case))


@pytest.mark.anyio
async def test_an_error_status_is_typed_and_carries_no_key() -> None:
    case = TESTDATA / "typesafe" / "triage-basic"
    body = json.dumps({"error": {"message": f"bad key {KEY}"}}).encode()
    runtime = _runtime("typesafe", case, [], status=401, body=body)
    with pytest.raises(AuthError) as caught:
        await runtime.decide(case, _inputs(case))
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value.body)


@pytest.mark.anyio
async def test_a_missing_key_fails_before_sending() -> None:
    case = TESTDATA / "typesafe" / "triage-basic"
    runtime = Runtime(environ={})
    with pytest.raises(AuthError, match="TYPESAFE_API_KEY"):
        await runtime.decide(case, _inputs(case))
    assert await runtime.list_decisions() == []
