"""Structured output: the response format asked for an `output=` type, and reading the answer back as that type."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from onellm.errors import MalformedResponseError
from onellm.providers import ResponseFormat

__all__ = ["parse_output", "response_format_for"]

_JSON = msgspec.json.Decoder(float_hook=Decimal)


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")


def response_format_for(tp: Any) -> ResponseFormat:
    """The native structured-output format for a type: a `msgspec.Struct`, dataclass, `TypedDict` or pydantic model.

    Raises:
        TypeError: the type is not a JSON object type.
    """
    if _is_pydantic(tp):
        schema = tp.model_json_schema()
    else:
        from onellm.schema import compile_type

        schema = compile_type(tp).schema
    if schema.get("type") != "object":
        raise TypeError(f"output type {getattr(tp, '__name__', tp)!r} must be a JSON object type (a record type)")
    return ResponseFormat.json_schema(schema, name=getattr(tp, "__name__", "output"))


def parse_output(tp: Any, text: str, *, provider: str | None) -> Any:
    """Read an answer's JSON text as `tp` (numbers as `Decimal` first, so `120.50` stays `120.50`).

    Raises:
        MalformedResponseError: the text is not JSON, or does not fit `tp` (the message names the path).
    """
    name = getattr(tp, "__name__", str(tp))
    try:
        data = _JSON.decode(text)
    except msgspec.DecodeError as error:
        raise MalformedResponseError(f"the answer is not JSON for {name}: {error}", provider=provider) from error
    if _is_pydantic(tp):
        try:
            return tp.model_validate(data)
        except Exception as error:  # pydantic's ValidationError, without importing pydantic
            raise MalformedResponseError(f"the answer does not fit {name}: {error}", provider=provider) from error
    from onellm.schema import ArgumentError, compile_type

    try:
        return compile_type(tp).convert(data)
    except ArgumentError as error:
        path = error.path
        where = f" at {path}" if path else ""
        raise MalformedResponseError(
            f"the answer does not fit {name}{where}: {error.problem}", provider=provider
        ) from error
