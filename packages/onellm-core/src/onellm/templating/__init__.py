"""Prompt templates in the language of Go's `text/template`.

`render(text, scope)` parses (once, cached) and renders; `Template.parse(text)` gives the parsed template to render
many times. Errors are `TemplateError` with a kind (`parse`, `execute`, `embed`, `limit`), the template name,
line, column and byte offset. See `docs/templating.md`.
"""

from onellm._public import publish as _publish
from onellm.errors import TemplateError
from onellm.templating._template import (
    Embedded,
    EmbedSource,
    FileEmbedSource,
    MissingKey,
    PromptEmbedSource,
    Template,
    render,
)

__all__ = [
    "EmbedSource",
    "Embedded",
    "FileEmbedSource",
    "MissingKey",
    "PromptEmbedSource",
    "Template",
    "TemplateError",
    "render",
]

_publish("onellm.templating", EmbedSource, Embedded, FileEmbedSource, PromptEmbedSource, Template)
