"""Request bodies that reuse each unchanged message's JSON (`reuse=True`, what the providers send) are byte for byte
the bodies made without it, on the first request and on every later one, and follow every change made to a message
in place."""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from onellm.errors import UnsupportedParameterError
from onellm.messages import AssetPart, JsonPart, Message, ProviderPart, TextPart, ToolCall
from onellm.messages.memo import MEMO
from onellm.providers._request import CacheOptions, ChatRequest, HostedToolDefinition
from onellm.providers.anthropic._codec import encode_messages_request
from onellm.providers.gemini._request import encode_request
from onellm.providers.openai._chat import ChatFlavor, encode_chat_request
from onellm.providers.openai._responses import encode_responses_request

from ._fixtures import case_id, cases, chat_request, load

ENCODER = msgspec.json.Encoder(decimal_format="number")

Encode = Callable[[ChatRequest, bool], tuple[dict[str, Any], list[Any]]]
CODECS: dict[str, Encode] = {
    "openai-chat": lambda r, reuse: encode_chat_request(r, ChatFlavor(), reuse=reuse),
    "openai-responses": lambda r, reuse: encode_responses_request(r, reuse=reuse),
    "anthropic": lambda r, reuse: encode_messages_request(r, max_tokens=100, reuse=reuse),
    "gemini": lambda r, reuse: encode_request(r, reuse=reuse),
}


def body(codec: str, request: ChatRequest, *, reuse: bool) -> tuple[bytes, list[Any]]:
    data, warnings = CODECS[codec](request, reuse)
    return ENCODER.encode(data), warnings


def same_bodies(codec: str, request: ChatRequest) -> bytes:
    """The body made without reuse, checked equal to the reused body: made (each message noted), made and kept, and
    taken from what was kept."""
    plain, plain_warnings = body(codec, request, reuse=False)
    for _ in range(3):
        reused, warnings = body(codec, request, reuse=True)
        assert reused == plain
        assert warnings == plain_warnings
    return plain


FOLDERS = {"openai-chat": "openai-chat", "openai-responses": "openai-responses", "anthropic": "anthropic"}
FOLDERS["gemini"] = "gemini"
FIXTURES = [(codec, path) for codec, folder in FOLDERS.items() for path in cases(folder)]


@pytest.mark.parametrize(("codec", "path"), FIXTURES, ids=[f"{c}-{case_id(p)}" for c, p in FIXTURES])
def test_every_fixture_request_is_the_same_body_with_reuse(codec: str, path: Path) -> None:
    try:
        request = chat_request(load(path)["request"])
        CODECS[codec](request, False)
    except Exception:  # a case whose request this codec refuses: refused the same way with reuse
        with pytest.raises(Exception):  # noqa: B017
            CODECS[codec](chat_request(load(path)["request"]), True)
        return
    same_bodies(codec, request)


def history() -> list[Message]:
    return [
        Message(user=[TextPart("Read a.txt"), JsonPart({"n": 1})], cache=True),
        Message(
            assistant=[TextPart("Reading.")],
            tool_calls=[ToolCall(id="c1", tool="read_file", inputs={"path": "a.txt"}, result=[TextPart("alpha")])],
        ),
        Message(user=[TextPart("And b?")]),
        Message(assistant=[TextPart("It says beta.")]),
        Message(user=[TextPart("Thanks.")]),
    ]


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize(
    "change",
    [
        "text",
        "append",
        "result",
        "inputs",
        "replace-part",
        "cache",
        "nested",
    ],
)
def test_a_message_changed_in_place_is_encoded_again(codec: str, change: str) -> None:
    messages = history()
    request = ChatRequest("m", messages, system="Be brief.")
    before = same_bodies(codec, request)
    call = messages[1].tool_calls[0]
    if change == "text":
        messages[3].assistant[0].text = "It says gamma."
    elif change == "append":
        messages[2].user.append(TextPart("And c?"))
    elif change == "result":
        assert call.result is not None
        call.result.append(TextPart("more"))
    elif change == "inputs":
        call.inputs["path"] = "b.txt"
    elif change == "replace-part":
        messages[0].user[1] = JsonPart({"n": 2})
    elif change == "cache":
        messages[3].cache = True
    else:
        messages[0].user[1].json["n"] = 3  # type: ignore[union-attr]
    after = same_bodies(codec, request)
    if change != "cache" or codec == "anthropic":  # only Anthropic sends cache breakpoints in the messages
        assert after != before


def test_a_message_with_a_notice_gives_it_on_every_request() -> None:
    image = AssetPart(content_type="image/png", data=b"\x89PNG")
    messages = [Message(user=[TextPart("Draw.")], assistant=[TextPart("Here."), image]), Message(user=[TextPart("Ok")])]
    request = ChatRequest("m", messages)
    for _ in range(3):
        _, warnings = body("anthropic", request, reuse=True)
        assert [w.kind for w in warnings] == ["content_omitted"]


def test_anthropic_breakpoints_follow_the_request_cache_options() -> None:
    messages = history()
    short = ChatRequest("m", messages, cache=CacheOptions(ttl=dt.timedelta(minutes=5)))
    long = ChatRequest("m", messages, cache=CacheOptions(ttl=dt.timedelta(hours=1)))
    off = ChatRequest("m", messages, cache=CacheOptions(enabled=False))
    bodies = {same_bodies("anthropic", r) for r in (short, long, off, short)}
    assert len(bodies) == 3
    assert b'"ttl":"1h"' in same_bodies("anthropic", long)


def test_responses_custom_tools_are_in_the_key() -> None:
    messages = history()
    plain = ChatRequest("m", messages)
    custom = ChatRequest("m", messages, hosted_tools=[HostedToolDefinition(type="custom", name="read_file")])
    first = same_bodies("openai-responses", plain)
    second = same_bodies("openai-responses", custom)
    assert b"custom_tool_call" in second
    assert b"custom_tool_call" not in first
    assert same_bodies("openai-responses", plain) == first


def test_copies_and_pickles_leave_the_memo_behind() -> None:
    messages = history()
    same_bodies("anthropic", ChatRequest("m", messages))
    assert MEMO in messages[0].__dict__
    assert MEMO not in pickle.loads(pickle.dumps(messages[0])).__dict__
    assert MEMO not in msgspec.structs.replace(messages[0]).__dict__


# A compaction kept from OpenAI Responses (its `/responses/compact` output item, as a user-side provider part) stands for
# the whole conversation before it: an API that cannot take it refuses it, naming where it is, instead of sending the
# rest without it. The Responses API itself refuses a user-side part kept from another provider.
FOREIGN_USER_PARTS = {
    "openai-chat": ProviderPart(type="openai.compaction", raw={"type": "compaction", "encrypted_content": "gAAA"}),
    "openai-responses": ProviderPart(type="anthropic.compaction", raw={"type": "compaction", "content": "summary"}),
    "anthropic": ProviderPart(type="openai.compaction", raw={"type": "compaction", "encrypted_content": "gAAA"}),
    "gemini": ProviderPart(type="openai.compaction", raw={"type": "compaction", "encrypted_content": "gAAA"}),
}


@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_user_part_the_api_cannot_take_is_refused_not_dropped(codec: str, reuse: bool) -> None:
    messages = [
        Message(user=[TextPart("Hello.")], assistant=[TextPart("Hi.")]),
        Message(user=[FOREIGN_USER_PARTS[codec], TextPart("Go on.")]),
    ]
    with pytest.raises(UnsupportedParameterError, match=r"messages\[1\]\.user") as caught:
        CODECS[codec](ChatRequest("m", messages), reuse)
    assert str(caught.value.parameter).startswith("messages[1].user")


def test_the_responses_api_names_the_provider_part_it_refuses() -> None:
    message = Message(user=[TextPart("Go on."), FOREIGN_USER_PARTS["openai-responses"]])
    with pytest.raises(UnsupportedParameterError) as caught:
        encode_responses_request(ChatRequest("m", [message]))
    assert str(caught.value) == (
        "messages[0].user: the provider part 'anthropic.compaction' cannot be sent to the OpenAI Responses API as user "
        "content"
    )
