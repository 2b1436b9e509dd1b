"""The builtins, the standard functions and the OneLLM-only extensions, with Go's parameter types.

Each function declares the Go kind of its parameters, because the language converts and checks arguments by
declared type: `lower 1` fails with `expected string; found 1`, `indent .f "x"` with a float64 field fails with
`wrong type for value; expected int; got float64`. Kinds: `VALUE` (the builtins' `reflect.Value`: nil and missing
stay distinct), `ANY` (`interface {}`), `STRING` and `INT`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from onellm._go.fmt import (
    MISSING,
    U8,
    byte_len,
    check_text_size,
    format_float_json,
    from_bytes,
    go_type,
    sprint,
    sprintf,
    sprintln,
    to_bytes,
    value_text,
)
from onellm.templating._errors import CallError, LimitError
from onellm.templating._parse import GO_SPACE

__all__ = ["ANY", "INT", "STRING", "VALUE", "FuncSpec", "standard_functions", "truth"]

VALUE = 0
ANY = 1
STRING = 2
INT = 3


class FuncSpec:
    """One callable name: parameter kinds, an optional variadic kind, and the implementation."""

    __slots__ = ("impl", "name", "params", "special", "variadic")

    def __init__(
        self,
        name: str,
        params: tuple[int, ...],
        variadic: int | None,
        impl: Callable[..., Any],
        special: str = "",
    ) -> None:
        self.name = name
        self.params = params
        self.variadic = variadic
        self.impl = impl
        self.special = special


# ---------------------------------------------------------------------------------------------------------------
# Truth and comparison


def truth(v: Any) -> bool:
    t = type(v)
    if t is bool:
        return v  # type: ignore[no-any-return]
    if t is str or t is list or t is dict or t is tuple:
        return len(v) > 0
    if t is int or t is float:
        return v != 0  # type: ignore[no-any-return]
    if v is None or v is MISSING:
        return False
    if isinstance(v, (int, float, Decimal, complex)):
        return v != 0
    if isinstance(v, (Mapping, Sequence)):
        return len(v) > 0
    return True


_K_INVALID, _K_BOOL, _K_COMPLEX, _K_INT, _K_FLOAT, _K_STRING, _K_UINT = range(7)


def _basic_kind(v: Any) -> int:
    t = type(v)
    if t is str:
        return _K_STRING
    if t is int:
        return _K_INT
    if t is float or t is Decimal:
        return _K_FLOAT
    if t is bool:
        return _K_BOOL
    if t is U8:
        return _K_UINT
    if t is complex:
        return _K_COMPLEX
    if isinstance(v, bool):
        return _K_BOOL
    if isinstance(v, int):
        return _K_INT
    if isinstance(v, float):
        return _K_FLOAT
    if isinstance(v, str):
        return _K_STRING
    return _K_INVALID


def _reflect_kind(v: Any) -> str:
    if v is MISSING:
        return "invalid"
    if isinstance(v, Mapping):
        return "map"
    if isinstance(v, (list, tuple)):
        return "slice"
    if callable(v):
        return "func"
    return type(v).__name__


def _ind(v: Any) -> Any:
    return MISSING if v is None else v


def _num(v: Any) -> Any:
    return float(v) if type(v) is Decimal else v


def go_eq(arg1: Any, *arg2: Any) -> bool:
    arg1 = _ind(arg1)
    if not arg2:
        raise CallError("missing argument for comparison")
    k1 = _basic_kind(arg1)
    for arg in arg2:
        arg = _ind(arg)
        k2 = _basic_kind(arg)
        result = False
        if k1 != k2:
            if (k1 == _K_INT and k2 == _K_UINT) or (k1 == _K_UINT and k2 == _K_INT):
                result = int(arg1) == int(arg)
            elif arg1 is not MISSING and arg is not MISSING:
                raise CallError(f"incompatible types for comparison: {go_type(arg1)} and {go_type(arg)}")
        elif k1 == _K_INVALID:
            if _reflect_kind(arg1) != _reflect_kind(arg) and arg1 is not MISSING and arg is not MISSING:
                raise CallError(
                    "non-comparable types " + sprintf("%s: %v, %s: %v", [arg1, go_type(arg1), go_type(arg), arg])
                )
            if arg1 is MISSING or arg is MISSING:
                result = (arg1 is MISSING) == (arg is MISSING)
            else:
                if isinstance(arg, (Mapping, list, tuple)) or callable(arg):
                    raise CallError("non-comparable type " + sprintf("%s: %v", [arg, go_type(arg)]))
                result = arg1 == arg
        elif k1 == _K_FLOAT:
            result = float(arg1) == float(arg)
        else:
            result = arg1 == arg
        if result:
            return True
    return False


def go_ne(a: Any, b: Any) -> bool:
    return not go_eq(a, b)


def go_lt(a: Any, b: Any) -> bool:
    a = _ind(a)
    k1 = _basic_kind(a)
    if k1 == _K_INVALID:
        raise CallError("invalid type for comparison")
    b = _ind(b)
    k2 = _basic_kind(b)
    if k2 == _K_INVALID:
        raise CallError("invalid type for comparison")
    if k1 != k2:
        if (k1 == _K_INT and k2 == _K_UINT) or (k1 == _K_UINT and k2 == _K_INT):
            return int(a) < int(b)
        raise CallError(f"incompatible types for comparison: {go_type(a)} and {go_type(b)}")
    if k1 in (_K_BOOL, _K_COMPLEX):
        raise CallError("invalid type for comparison")
    return _num(a) < _num(b)  # type: ignore[no-any-return]


def go_le(a: Any, b: Any) -> bool:
    return go_lt(a, b) or go_eq(a, b)


def go_gt(a: Any, b: Any) -> bool:
    return not go_le(a, b)


def go_ge(a: Any, b: Any) -> bool:
    return not go_lt(a, b)


def go_not(v: Any) -> bool:
    return not truth(v)


# ---------------------------------------------------------------------------------------------------------------
# len, index, slice


def go_len(item: Any) -> int:
    if item is MISSING:
        raise CallError("reflect: call of reflect.Value.Type on zero Value")
    if item is None:
        raise CallError("len of nil pointer")
    if isinstance(item, str):
        return byte_len(item)
    if isinstance(item, (list, tuple, Mapping)):
        return len(item)
    raise CallError(f"len of type {go_type(item)}")


def _index_arg(index: Any, cap: int) -> int:
    if isinstance(index, int) and not isinstance(index, bool):
        x = int(index)
    elif index is None or index is MISSING:
        raise CallError("cannot index slice/array with nil")
    else:
        raise CallError(f"cannot index slice/array with type {go_type(index)}")
    if x < 0 or x > cap:
        raise CallError(f"index out of range: {x}")
    return x


def go_index(item: Any, *indexes: Any) -> Any:
    item = _ind(item)
    if item is MISSING:
        raise CallError("index of untyped nil")
    for index in indexes:
        index = _ind(index)
        if item is None:
            raise CallError("index of nil pointer")
        if isinstance(item, str):
            b = item.encode("ascii") if item.isascii() else to_bytes(item)
            x = _index_arg(index, len(b))
            if x == len(b):
                raise CallError("reflect: string index out of range")
            item = U8(b[x])
        elif isinstance(item, (list, tuple)):
            x = _index_arg(index, len(item))
            if x == len(item):
                raise CallError("reflect: slice index out of range")
            item = item[x]
        elif isinstance(item, Mapping):
            if index is MISSING:
                raise CallError("value is nil; should be of type string")
            if not isinstance(index, str):
                raise CallError(f"value has type {go_type(index)}; should be string")
            item = item.get(index)
        else:
            raise CallError(f"can't index item of type {go_type(item)}")
    return item


def go_slice(item: Any, *indexes: Any) -> Any:
    item = _ind(item)
    if item is MISSING:
        raise CallError("slice of untyped nil")
    if len(indexes) > 3:
        raise CallError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise CallError("cannot 3-index slice a string")
        b = item.encode("ascii") if item.isascii() else to_bytes(item)
        cap = len(b)
    elif isinstance(item, (list, tuple)):
        cap = len(item)
    else:
        raise CallError(f"can't slice item of type {go_type(item)}")
    idx = [0, cap, 0]
    for i, index in enumerate(indexes):
        idx[i] = _index_arg(_ind(index), cap)
    if idx[0] > idx[1]:
        raise CallError(f"invalid slice index: {idx[0]} > {idx[1]}")
    if len(indexes) == 3 and idx[1] > idx[2]:
        raise CallError(f"invalid slice index: {idx[1]} > {idx[2]}")
    if isinstance(item, str):
        if item.isascii():
            return item[idx[0] : idx[1]]
        return from_bytes(b[idx[0] : idx[1]])
    return item[idx[0] : idx[1]]


# ---------------------------------------------------------------------------------------------------------------
# Escapers


def _eval_args(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(["<no value>" if a is None or a is MISSING else a for a in args])


def html_escape(*args: Any) -> str:
    s = _eval_args(args)
    if not any(c in s for c in "'\"&<>\x00"):
        return s
    return (
        s.replace("&", "&amp;")
        .replace("'", "&#39;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("\x00", "\ufffd")
    )


_JS_ASCII = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "=": "\\u003D"}


def js_escape(*args: Any) -> str:
    s = _eval_args(args)
    out: list[str] = []
    for c in s:
        o = ord(c)
        if o < 0x80:
            r = _JS_ASCII.get(c)
            if r is not None:
                out.append(r)
            elif o < 0x20:
                out.append(f"\\u00{o:02X}")
            else:
                out.append(c)
        elif 0xDC80 <= o <= 0xDCFF or c.isprintable():
            out.append(c)
        else:
            out.append(f"\\u{o:04X}")
    return "".join(out)


_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def urlquery_escape(*args: Any) -> str:
    s = _eval_args(args)
    out: list[str] = []
    for b in to_bytes(s):
        c = chr(b)
        if c in _URL_SAFE:
            out.append(c)
        elif c == " ":
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Call


def go_call(name: str, fn: Any, *args: Any) -> Any:
    fn = _ind(fn)
    if fn is MISSING:
        raise CallError("call of nil")
    if not callable(fn) or isinstance(fn, type):
        raise CallError(f"non-function {name} of type {go_type(fn)}")
    try:
        return fn(*[None if a is MISSING else a for a in args])
    except CallError:
        raise
    except Exception as e:
        raise CallError(str(e) or type(e).__name__) from e


# ---------------------------------------------------------------------------------------------------------------
# Path helpers (Go's package path)


def path_clean(p: str) -> str:
    if p == "":
        return "."
    rooted = p[0] == "/"
    n = len(p)
    out: list[str] = []
    r = 0
    dotdot = 0
    if rooted:
        out.append("/")
        r = 1
        dotdot = 1
    while r < n:
        if p[r] == "/" or (p[r] == "." and (r + 1 == n or p[r + 1] == "/")):
            r += 1
        elif p[r] == "." and p[r + 1] == "." and (r + 2 == n or p[r + 2] == "/"):
            r += 2
            cur = "".join(out)
            if len(cur) > dotdot:
                w = len(cur) - 1
                while w > dotdot and cur[w] != "/":
                    w -= 1
                out = [cur[:w]]
            elif not rooted:
                if cur:
                    out.append("/")
                out.append("..")
                dotdot = len("".join(out))
        else:
            cur_len = len("".join(out))
            if (rooted and cur_len != 1) or (not rooted and cur_len != 0):
                out.append("/")
            j = r
            while j < n and p[j] != "/":
                j += 1
            out.append(p[r:j])
            r = j
    res = "".join(out)
    return res or "."


def path_base(p: str) -> str:
    if p == "":
        return "."
    p = p.rstrip("/")
    if p == "":
        return "/"
    i = p.rfind("/")
    return p[i + 1 :] if i >= 0 else p


def path_dir(p: str) -> str:
    i = p.rfind("/")
    return path_clean(p[: i + 1])


def path_ext(p: str) -> str:
    for i in range(len(p) - 1, -1, -1):
        if p[i] == "/":
            break
        if p[i] == ".":
            return p[i:]
    return ""


def path_join(*parts: str) -> str:
    nonempty = [e for e in parts if e != ""]
    if not nonempty:
        return ""
    return path_clean("/".join(nonempty))


# ---------------------------------------------------------------------------------------------------------------
# Strings

_LOWER_CACHE: dict[str, str] = {"\u0130": "i"}
_UPPER_CACHE: dict[str, str] = {}


def _simple(c: str, upper: bool) -> str:
    cache = _UPPER_CACHE if upper else _LOWER_CACHE
    r = cache.get(c)
    if r is None:
        r = c.upper() if upper else c.lower()
        if len(r) != 1:
            t = c.title() if upper else c
            r = t if len(t) == 1 and t != c and upper else c
        cache[c] = r
    return r


def go_lower(s: str) -> str:
    if s.isascii():
        return s.lower()
    return "".join([_simple(c, False) for c in s])


def go_upper(s: str) -> str:
    if s.isascii():
        return s.upper()
    return "".join([_simple(c, True) for c in s])


def go_trim(s: str) -> str:
    return s.strip(GO_SPACE)


def go_trim_prefix(s: str, p: str) -> str:
    return s[len(p) :] if p and s.startswith(p) else s


def go_trim_suffix(s: str, p: str) -> str:
    return s[: len(s) - len(p)] if p and s.endswith(p) else s


def go_replace(s: str, old: str, new: str) -> str:
    if old == "" and (len(s) + 1) * len(new) > OUTPUT_LIMIT:
        raise LimitError("replace")
    return s.replace(old, new)


def go_default(fallback: Any, v: Any) -> Any:
    if v is None or v is MISSING or v == "":
        return fallback
    return v


def go_join(sep: str, lst: Any) -> str:
    if not isinstance(lst, (list, tuple)):
        raise CallError(f"join: expected a list, got {go_type(lst)}")
    return sep.join([e if isinstance(e, str) else value_text(e) for e in lst])


def go_split(sep: str, s: str) -> list[Any]:
    if sep == "":
        return list(s)
    return list(s.split(sep))


def go_indent(n: int, s: str, fname: str = "indent") -> str:
    if n < 0:
        raise CallError(f"{fname}: negative width {n}")
    if n * (s.count("\n") + 1) + len(s) > OUTPUT_LIMIT:
        raise LimitError(fname)
    pad = " " * n
    return pad + s.replace("\n", "\n" + pad)


def go_nindent(n: int, s: str) -> str:
    return "\n" + go_indent(n, s, "nindent")


def go_truncate(n: int, s: str) -> str:
    if n < 0:
        raise CallError(f"truncate: negative length {n}")
    return s[:n]


def go_dict(*args: Any) -> dict[str, Any]:
    if len(args) % 2:
        raise CallError(f"dict: odd number of arguments ({len(args)})")
    out: dict[str, Any] = {}
    for i in range(0, len(args), 2):
        k = args[i]
        if not isinstance(k, str):
            raise CallError(f"dict: key {i // 2} is {go_type(k)}, not string")
        out[k] = args[i + 1]
    return out


def go_list(*args: Any) -> list[Any]:
    return list(args)


# ---------------------------------------------------------------------------------------------------------------
# JSON, as Go's encoding/json writes it


def _json_string(s: str) -> str:
    out = ['"']
    for c in s:
        o = ord(c)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}.get(c, f"\\u{o:04x}"))
        elif o == 0x2028 or o == 0x2029:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _json(v: Any, indent: str | None, level: int) -> str:
    t = type(v)
    if t is str:
        return _json_string(v) if not (v.isascii() and v.isprintable() and '"' not in v and "\\" not in v) else f'"{v}"'
    if v is None or v is MISSING:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int or t is U8:
        return str(int(v))
    if t is float or t is Decimal:
        f = float(v)
        if math.isinf(f) or math.isnan(f):
            raise CallError(f"json: unsupported value: {value_text(f)}")
        return format_float_json(f)
    if isinstance(v, Mapping):
        if not v:
            return "{}"
        items = sorted(v.items(), key=lambda kv: str(kv[0]))
        if indent is None:
            return "{" + ",".join(_json_string(str(k)) + ":" + _json(e, None, 0) for k, e in items) + "}"
        inner = indent * (level + 1)
        body = (",\n").join(inner + _json_string(str(k)) + ": " + _json(e, indent, level + 1) for k, e in items)
        return "{\n" + body + "\n" + indent * level + "}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        if indent is None:
            return "[" + ",".join(_json(e, None, 0) for e in v) + "]"
        inner = indent * (level + 1)
        body = ",\n".join(inner + _json(e, indent, level + 1) for e in v)
        return "[\n" + body + "\n" + indent * level + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return _json(float(v), indent, level)
    if isinstance(v, str):
        return _json_string(str(v))
    stamp = _time_text(v)
    if stamp is not None:
        return _json_string(stamp)
    raise CallError(f"json: unsupported type: {go_type(v)}")


def _time_text(v: Any) -> str | None:
    """RFC 3339 text of a datetime, as Go's time.Time writes itself into JSON and YAML."""
    from datetime import datetime

    if not isinstance(v, datetime):
        return None
    from onellm._go.timefmt import format_date

    return format_date("2006-01-02T15:04:05.999999999Z07:00", v)


def to_json(v: Any) -> str:
    check_text_size(v)
    return _json(v, None, 0)


def to_pretty_json(v: Any) -> str:
    check_text_size(v)
    return _json(v, "  ", 0)


# ---------------------------------------------------------------------------------------------------------------
# YAML (OneLLM-only)

_YAML_PLAIN_BAD = frozenset("-?:,[]{}#&*!|>'\"%@`")
_YAML_WORDS = frozenset(
    [
        "null",
        "Null",
        "NULL",
        "~",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "y",
        "Y",
        "n",
        "N",
    ]
)


def _yaml_scalar_string(s: str) -> str:
    if (
        s == ""
        or s in _YAML_WORDS
        or s[0] in _YAML_PLAIN_BAD
        or s[0] in " \t"
        or s[-1] in " \t"
        or ": " in s
        or " #" in s
        or s.endswith(":")
        or any(ord(c) < 0x20 or c in "\x7f\u2028\u2029\ufeff" for c in s)
        or _looks_numeric(s)
    ):
        return _json_string(s)
    return s


def _looks_numeric(s: str) -> bool:
    try:
        float(s.replace("_", ""))
        return True
    except ValueError:
        return s.lower() in (".inf", "-.inf", "+.inf", ".nan") or s.startswith(("0x", "0o"))


def _yaml(v: Any, level: int, out: list[str], key_ctx: bool) -> None:
    pad = "  " * level
    if isinstance(v, Mapping) and v:
        first = True
        for k, e in v.items():
            prefix = "" if (first and key_ctx) else pad
            first = False
            ks = _yaml_scalar_string(str(k))
            if isinstance(e, Mapping) and e:
                out.append(f"{prefix}{ks}:\n")
                _yaml(e, level + 1, out, False)
            elif isinstance(e, (list, tuple)) and e:
                out.append(f"{prefix}{ks}:\n")
                _yaml(e, level, out, False)
            else:
                out.append(f"{prefix}{ks}: {_yaml_flow(e)}\n")
        return
    if isinstance(v, (list, tuple)) and v:
        for e in v:
            if isinstance(e, Mapping) and e:
                out.append(f"{pad}- ")
                _yaml(e, level + 1, out, True)
            elif isinstance(e, (list, tuple)) and e:
                out.append(f"{pad}-\n")
                _yaml(e, level + 1, out, False)
            else:
                out.append(f"{pad}- {_yaml_flow(e)}\n")
        return
    out.append(pad + _yaml_flow(v) + "\n")


def _yaml_flow(v: Any) -> str:
    if v is None or v is MISSING:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, (float, Decimal)):
        f = float(v)
        if math.isnan(f):
            return ".nan"
        if math.isinf(f):
            return ".inf" if f > 0 else "-.inf"
        return format_float_json(f)
    if isinstance(v, str):
        return _yaml_scalar_string(v)
    if isinstance(v, Mapping):
        return "{}"
    if isinstance(v, (list, tuple)):
        return "[]"
    stamp = _time_text(v)
    if stamp is not None:
        return stamp
    raise CallError(f"yaml: unsupported type: {go_type(v)}")


def to_yaml(v: Any) -> str:
    check_text_size(v)
    out: list[str] = []
    _yaml(v, 0, out, False)
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Regular expressions


def regex_match(pattern: str, s: str) -> bool:
    from onellm._go.regexp import compile_re2

    return compile_re2(pattern).search(s) is not None


def regex_replace(pattern: str, repl: str, s: str) -> str:
    from onellm._go.regexp import compile_re2, replace_all

    return replace_all(compile_re2(pattern), repl, s)


# ---------------------------------------------------------------------------------------------------------------
# Table

OUTPUT_LIMIT = 64 * 1024 * 1024

_S = (STRING,)
_SS = (STRING, STRING)


def _printf(fmt: str, *args: Any) -> str:
    return sprintf(fmt, [None if a is MISSING else a for a in args])


def _print(*args: Any) -> str:
    return sprint([None if a is MISSING else a for a in args])


def _println(*args: Any) -> str:
    return sprintln([None if a is MISSING else a for a in args])


def _is_abs(p: str) -> bool:
    return p.startswith("/")


def _trim_ext(p: str) -> str:
    e = path_ext(p)
    return p[: len(p) - len(e)] if e else p


def _builtin_specs() -> list[FuncSpec]:
    V = VALUE
    return [
        FuncSpec("and", (V,), V, lambda *a: None, special="and"),
        FuncSpec("or", (V,), V, lambda *a: None, special="or"),
        FuncSpec("call", (V,), V, go_call, special="call"),
        FuncSpec("html", (), ANY, html_escape),
        FuncSpec("index", (V,), V, go_index),
        FuncSpec("slice", (V,), V, go_slice),
        FuncSpec("js", (), ANY, js_escape),
        FuncSpec("len", (V,), None, go_len),
        FuncSpec("not", (V,), None, go_not),
        FuncSpec("print", (), ANY, _print),
        FuncSpec("printf", (STRING,), ANY, _printf),
        FuncSpec("println", (), ANY, _println),
        FuncSpec("urlquery", (), ANY, urlquery_escape),
        FuncSpec("eq", (V,), V, go_eq),
        FuncSpec("ge", (V, V), None, go_ge),
        FuncSpec("gt", (V, V), None, go_gt),
        FuncSpec("le", (V, V), None, go_le),
        FuncSpec("lt", (V, V), None, go_lt),
        FuncSpec("ne", (V, V), None, go_ne),
    ]


def _standard_specs() -> list[FuncSpec]:
    return [
        FuncSpec("raw", _S, None, lambda s: s),
        FuncSpec("base", _S, None, path_base),
        FuncSpec("dir", _S, None, path_dir),
        FuncSpec("ext", _S, None, path_ext),
        FuncSpec("trimExt", _S, None, _trim_ext),
        FuncSpec("pathJoin", (), STRING, path_join),
        FuncSpec("isAbs", _S, None, _is_abs),
        FuncSpec("lower", _S, None, go_lower),
        FuncSpec("upper", _S, None, go_upper),
        FuncSpec("trim", _S, None, go_trim),
        FuncSpec("trimPrefix", _SS, None, go_trim_prefix),
        FuncSpec("trimSuffix", _SS, None, go_trim_suffix),
        FuncSpec("replace", (STRING, STRING, STRING), None, go_replace),
        FuncSpec("contains", _SS, None, lambda s, sub: sub in s),
        FuncSpec("hasPrefix", _SS, None, lambda s, p: s.startswith(p)),
        FuncSpec("hasSuffix", _SS, None, lambda s, p: s.endswith(p)),
        FuncSpec("default", (ANY, ANY), None, go_default),
        FuncSpec("embed", _S, None, lambda ref: ref, special="embed"),
        # OneLLM-only extensions.
        FuncSpec("toJson", (ANY,), None, to_json),
        FuncSpec("toPrettyJson", (ANY,), None, to_pretty_json),
        FuncSpec("toYaml", (ANY,), None, to_yaml),
        FuncSpec("join", (STRING, ANY), None, go_join),
        FuncSpec("split", _SS, None, go_split),
        FuncSpec("indent", (INT, STRING), None, go_indent),
        FuncSpec("nindent", (INT, STRING), None, go_nindent),
        FuncSpec("truncate", (INT, STRING), None, go_truncate),
        FuncSpec("now", (), None, lambda: None, special="now"),
        FuncSpec("date", (STRING, ANY), None, lambda layout, t: None, special="date"),
        FuncSpec("regexMatch", _SS, None, regex_match),
        FuncSpec("regexReplace", (STRING, STRING, STRING), None, regex_replace),
        FuncSpec("dict", (), ANY, go_dict),
        FuncSpec("list", (), ANY, go_list),
    ]


_STANDARD: dict[str, FuncSpec] = {s.name: s for s in _builtin_specs() + _standard_specs()}


def standard_functions() -> dict[str, FuncSpec]:
    return _STANDARD


def host_spec(name: str, fn: Callable[..., Any]) -> FuncSpec:
    """A host-registered function: its parameters take any value; the count comes from its signature."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return FuncSpec(name, (), ANY, _host_wrap(name, fn))
    params: list[int] = []
    variadic: int | None = None
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is not p.empty:
                variadic = ANY
                break
            params.append(ANY)
        elif p.kind == p.VAR_POSITIONAL:
            variadic = ANY
            break
    return FuncSpec(name, tuple(params), variadic, _host_wrap(name, fn))


def _host_wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except (CallError, LimitError):
            raise
        except Exception as e:
            raise CallError(str(e) or type(e).__name__) from e

    return call
