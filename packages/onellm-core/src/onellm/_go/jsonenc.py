"""The bytes Go's `encoding/json` writes for a value (`json.Marshal`), for request bodies that must match a Go service's.

`encode(value)` returns compact JSON with object keys sorted, `<`, `>` and `&` written as `\\u003c`, `\\u003e` and
`\\u0026`, U+2028 and U+2029 escaped, control characters as Go writes them (`\\b`, `\\f`, `\\n`, `\\r`, `\\t`, else
`\\u00xx`), and every number read as a 64-bit float and printed in Go's shortest form: plain decimal when
1e-6 <= |x| < 1e21, exponent form outside (`1e+21`, `1e-7`), `-0` for negative zero. Integers beyond 2**53 lose
precision on the way, as they do in Go when JSON is read into `any`. NaN and infinities are refused, as Go refuses them.

The work is split for speed: one walk turns the value into plain Python data whose numbers the C `json` encoder already
prints as Go does (an integral float becomes an int, and so on), the few numbers it would print differently
(1e-6 <= |x| < 1e-4, exponents -7 to -9, negative zero) are stood in for by marked strings, the C encoder writes the
text, and the HTML characters and line separators are replaced afterwards: they can only occur inside strings, so a
plain replacement over the whole text is exact. `testdata/deciders/encoding/` holds cases with the bytes real Go wrote.
"""

from __future__ import annotations

import base64
import datetime as _dt
import enum
import json
import math
import re
import secrets
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from onellm._describe import join_path

__all__ = ["GoJsonError", "encode", "encode_text", "go_number"]

_MAX_DEPTH = 200
_EXACT = 2**53
_SURROGATE = re.compile("[\ud800-\udfff]")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)


class GoJsonError(ValueError):
    """A value Go's `encoding/json` would refuse (NaN, an infinity, a type it cannot write). `path` names where."""

    def __init__(self, problem: str, path: str) -> None:
        self.problem = problem
        self.path = path
        super().__init__(f"{path or 'value'}: {problem}")


def go_number(x: float) -> str:
    """A float64 as Go's `encoding/json` prints it.

    Raises:
        GoJsonError: NaN or an infinity.
    """
    if x != x or x in (math.inf, -math.inf):
        raise GoJsonError(f"{x!r} is not a JSON number", "")
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    a = abs(x)
    if a < 1e21 and x.is_integer():
        # Go prints the shortest digits, not the float's exact value: 1.2345678901234567e19 is 12345678901234567000.
        return str(int(x)) if a <= _EXACT else str(int(Decimal(repr(x))))
    text = repr(x)
    if 1e-6 <= a < 1e21:
        if "e" in text:  # Python writes 1e-05; Go writes 0.00001 in this range
            return format(Decimal(text), "f")
        return text
    mantissa, _, exponent = text.partition("e")
    sign = exponent[0]
    digits = exponent[1:].lstrip("0") or "0"
    if sign == "-" and len(digits) == 1:
        return f"{mantissa}e-{digits}"  # Go cleans e-07 to e-7 (and only a negative one-digit exponent)
    return f"{mantissa}e{sign}{digits.rjust(2, '0')}"


def _key(key: Any, path: str) -> str:
    if type(key) is str:
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float | Decimal):
        return go_number(float(key))
    if isinstance(key, enum.Enum):
        return _key(key.value, path)
    raise GoJsonError(f"an object key must be text, found {type(key).__name__}", path)


class _Walk:
    """One encoding: the specials found (index -> Go text) and the marker that stands in for each."""

    __slots__ = ("marker", "specials")

    def __init__(self) -> None:
        self.specials: list[str] = []
        self.marker = ""

    def special(self, text: str) -> str:
        if not self.marker:
            self.marker = "\x00" + secrets.token_hex(8) + ":"
        self.specials.append(text)
        return f"{self.marker}{len(self.specials) - 1}\x00"

    def number(self, x: float, path: str) -> Any:
        if x != x or x in (math.inf, -math.inf):
            raise GoJsonError(f"{x!r} is not a JSON number", path)
        a = abs(x)
        if x == 0:
            return self.special("-0") if math.copysign(1.0, x) < 0 else 0
        if a < 1e21 and x.is_integer():
            return int(x) if a <= _EXACT else self.special(go_number(x))
        if a >= 1e-4:  # Python's repr prints these as Go does (plain below 1e16, exponent at 1e21 and above)
            return x
        return self.special(go_number(x))

    def value(self, value: Any, path: str, depth: int) -> Any:
        t = type(value)
        if t is str or value is None or t is bool:
            return value
        if t is int:
            if -_EXACT <= value <= _EXACT:
                return value
            try:
                as_float = float(value)
            except OverflowError:
                raise GoJsonError("the number is too large for a 64-bit float", path) from None
            return self.number(as_float, path)
        if t is float:
            return self.number(value, path)
        if depth > _MAX_DEPTH:
            raise GoJsonError(f"the value nests deeper than {_MAX_DEPTH} levels", path)
        if t is dict or isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = _key(k, path)
                out[key] = self.value(v, join_path(path, key), depth + 1)
            return out
        if t is list or t is tuple:
            return [self.value(v, join_path(path, i), depth + 1) for i, v in enumerate(value)]
        return self.other(value, path, depth)

    def fast(self, value: Any, depth: int) -> Any:
        """`value` without keeping paths (the common case); a failure is located again by `value`."""
        t = type(value)
        if t is dict:
            if depth > _MAX_DEPTH:
                raise GoJsonError("too deep", "")
            out: dict[str, Any] = {}
            for k, v in value.items():
                if type(k) is not str:
                    k = _key(k, "")
                tv = type(v)
                if (
                    tv is str
                    or v is None
                    or tv is bool
                    or (tv is int and -_EXACT <= v <= _EXACT)
                    or (tv is float and 1e-4 <= abs(v) < 1e16 and not v.is_integer())
                ):
                    out[k] = v
                else:
                    out[k] = self.fast(v, depth + 1)
            return out
        if t is list or t is tuple:
            if depth > _MAX_DEPTH:
                raise GoJsonError("too deep", "")
            items: list[Any] = []
            append = items.append
            for v in value:
                tv = type(v)
                if (
                    tv is str
                    or v is None
                    or tv is bool
                    or (tv is int and -_EXACT <= v <= _EXACT)
                    or (tv is float and 1e-4 <= abs(v) < 1e16 and not v.is_integer())
                ):
                    append(v)
                else:
                    append(self.fast(v, depth + 1))
            return items
        if t is float:
            return self.number(value, "")
        return self.value(value, "", depth)

    def other(self, value: Any, path: str, depth: int) -> Any:
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, enum.Enum):
            return self.value(value.value, path, depth + 1)
        if isinstance(value, int):
            return self.value(int(value), path, depth)
        if isinstance(value, float):
            return self.number(float(value), path)
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise GoJsonError(f"{value} is not a JSON number", path)
            try:
                return self.number(float(value), path)
            except OverflowError:  # pragma: no cover - float() of a finite Decimal saturates to inf instead
                raise GoJsonError("the number is too large for a 64-bit float", path) from None
        if isinstance(value, str):
            return str(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return base64.b64encode(bytes(value)).decode("ascii")  # Go writes []byte as standard base64
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                raise GoJsonError("a datetime needs a time zone to be written as Go writes a time", path)
            text = value.isoformat()
            if text.endswith("+00:00"):
                text = text[:-6] + "Z"
            return text
        if isinstance(value, _dt.date):
            return value.isoformat()
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v, join_path(path, i), depth + 1) for i, v in enumerate(value)]
        try:
            import msgspec

            plain = msgspec.to_builtins(value, builtin_types=(Decimal,))
        except TypeError:
            raise GoJsonError(f"a {type(value).__name__} cannot be written as JSON", path) from None
        return self.value(plain, path, depth + 1)


def _text(value: Any) -> str:
    walk = _Walk()
    try:
        plain = walk.fast(value, 0)
    except (GoJsonError, RecursionError):
        try:
            walk.value(value, "", 0)  # again, keeping paths, to say where
        except RecursionError:
            raise GoJsonError("the value nests too deeply to be written", "") from None
        raise  # pragma: no cover - the second walk always fails where the first did
    text = _ENCODER.encode(plain)
    if not text.isascii():
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if "<" in text:
        text = text.replace("<", "\\u003c")
    if ">" in text:
        text = text.replace(">", "\\u003e")
    if "&" in text:
        text = text.replace("&", "\\u0026")
    if walk.specials:
        marker = re.escape(json.dumps(walk.marker)[1:-1])  # the marker as the encoder escaped it
        specials = walk.specials
        text = re.sub(f'"{marker}(\\d+)\\\\u0000"', lambda m: specials[int(m[1])], text)
    return text


def _without_surrogates(text: str) -> str:
    """A lone surrogate (a Python string can hold one; UTF-8 cannot) as Go writes invalid text: `\\ufffd`."""
    return _SURROGATE.sub(lambda _: "\\ufffd", text)


def encode_text(value: Any) -> str:
    """The JSON text Go's `json.Marshal` gives for `value` (see the module docstring).

    Raises:
        GoJsonError: a value Go would refuse, with the path of the first one.
    """
    text = _text(value)
    if not text.isascii() and _SURROGATE.search(text):
        return _without_surrogates(text)
    return text


def encode(value: Any) -> bytes:
    """`encode_text(value)` as UTF-8 bytes."""
    text = _text(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _without_surrogates(text).encode("utf-8")
