"""The Gemini API provider (`generateContent` and `streamGenerateContent` on v1beta, token counting, embeddings and
batches)."""

from onellm.providers.gemini._provider import GeminiProvider, collect, decode_generate_content

__all__ = ["GeminiProvider", "collect", "decode_generate_content"]
