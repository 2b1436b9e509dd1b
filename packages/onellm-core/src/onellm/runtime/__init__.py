"""The runtime and the happy path: `Runtime` (catalog, providers, store, record sinks, tools, grants, clock, spend
caps, result cache), the default runtime as a context variable, and the verbs (`ask`, `generate`, `stream`,
`stream_text`, `embed`, `chat`, `run_script`, and the media calls `generate_image`, `speak`, `transcribe`,
`moderate` with their streamed forms) with their blocking `_sync` twins. Every chat call is an instance saved to
the runtime's store.

Beneath the verbs: `_runtime` (the `Runtime`), `_call` (one model call, whole or streamed), `_output` (structured
output), `_spend` (spend holds), `_default` (the default runtime), and `_services`, the `RuntimeServices` protocol that
chat sessions, scripted runs, embeddings and the agent loop build on instead of the `Runtime` itself."""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.runtime._assets import Asset, copy_assets, inline_assets, store_assets
from onellm.runtime._cache import ResultCache
from onellm.runtime._call import MAX_INPUT_DEPTH, ModelCall, StreamingAnswer, kept_calls
from onellm.runtime._chat import ChatSession
from onellm.runtime._default import current_runtime, set_default_runtime, use_runtime
from onellm.runtime._media import (
    AudioSource,
    ImageOptions,
    ImageResult,
    ImageSource,
    MediaStream,
    ModerationResult,
    SpeechOptions,
    SpeechResult,
    TranscriptionOptions,
    TranscriptionResult,
)
from onellm.runtime._media_verbs import (
    generate_image,
    generate_image_sync,
    moderate,
    moderate_sync,
    speak,
    speak_sync,
    stream_image,
    stream_speech,
    stream_transcription,
    transcribe,
    transcribe_sync,
)
from onellm.runtime._prompt import Content, RequestOptions, api_source, new_message_id, prompt_parts, runtime_source
from onellm.runtime._registry import ProviderFactory, ProviderRegistry
from onellm.runtime._results import AskResult, ScriptResult
from onellm.runtime._runtime import Runtime
from onellm.runtime._runtime import _never_waits as _never_waits  # for the agent loop, which gives leases back
from onellm.runtime._script import expand_from_part, template_scope, when_holds
from onellm.runtime._services import RuntimeServices
from onellm.runtime._sync import drive
from onellm.runtime._verbs import (
    ask,
    ask_sync,
    chat,
    embed,
    embed_sync,
    generate,
    generate_sync,
    run_script,
    run_script_sync,
    stream,
    stream_text,
    stream_text_sync,
)

__all__ = [
    "MAX_INPUT_DEPTH",
    "AskResult",
    "Asset",
    "AudioSource",
    "ChatSession",
    "Content",
    "ImageOptions",
    "ImageResult",
    "ImageSource",
    "MediaStream",
    "ModelCall",
    "ModerationResult",
    "ProviderFactory",
    "ProviderRegistry",
    "RequestOptions",
    "ResultCache",
    "Runtime",
    "RuntimeServices",
    "ScriptResult",
    "SpeechOptions",
    "SpeechResult",
    "StreamingAnswer",
    "TranscriptionOptions",
    "TranscriptionResult",
    "api_source",
    "ask",
    "ask_sync",
    "chat",
    "copy_assets",
    "current_runtime",
    "drive",
    "embed",
    "embed_sync",
    "expand_from_part",
    "generate",
    "generate_image",
    "generate_image_sync",
    "generate_sync",
    "inline_assets",
    "kept_calls",
    "moderate",
    "moderate_sync",
    "new_message_id",
    "prompt_parts",
    "run_script",
    "run_script_sync",
    "runtime_source",
    "set_default_runtime",
    "speak",
    "speak_sync",
    "store_assets",
    "stream",
    "stream_image",
    "stream_speech",
    "stream_text",
    "stream_text_sync",
    "stream_transcription",
    "template_scope",
    "transcribe",
    "transcribe_sync",
    "use_runtime",
    "when_holds",
]

_publish(
    "onellm",
    AskResult,
    Asset,
    ChatSession,
    ProviderRegistry,
    RequestOptions,
    ResultCache,
    Runtime,
    ScriptResult,
    StreamingAnswer,
)
_publish("onellm.runtime", RuntimeServices)
