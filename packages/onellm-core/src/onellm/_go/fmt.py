"""Go's value model and `fmt` printing, for the plain values a template sees.

Values map to Go types this way: `None` is nil, `bool` is bool, `int` is int (`U8` is the uint8 that indexing a
string yields), `float` and `Decimal` are float64, `str` is string, lists and tuples are `[]interface {}`, mappings
are `map[string]interface {}`. `MISSING` stands for Go's invalid `reflect.Value`: what a missing map key gives.

Strings carry Go's byte semantics where Go shows bytes: a byte that is not valid UTF-8 (a `slice` through a
multi-byte character) is kept as a lone surrogate U+DC80..U+DCFF, the `surrogateescape` convention, so `len`, `%q`
and `%x` see the same bytes Go does.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from onellm._go.errors import TextTooLarge

__all__ = [
    "MISSING",
    "U8",
    "go_quote",
    "go_type",
    "sorted_items",
    "sprint",
    "sprintf",
    "sprintln",
    "to_bytes",
    "value_text",
]


class _Missing:
    """The invalid value: a missing map key, or nil that went through a pipeline."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class U8(int):
    """A byte (Go uint8), the result of indexing a string."""

    __slots__ = ()


def to_bytes(s: str) -> bytes:
    """The UTF-8 bytes of a string, turning escaped raw bytes back into themselves."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace")


def from_bytes(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def byte_len(s: str) -> int:
    if s.isascii():
        return len(s)
    return len(to_bytes(s))


def go_type(v: Any) -> str:
    """Go's name for the dynamic type of a value (`%T`)."""
    t = type(v)
    if t is str:
        return "string"
    if t is int:
        return "int"
    if t is float or t is Decimal:
        return "float64"
    if t is bool:
        return "bool"
    if v is None or v is MISSING:
        return "<nil>"
    if t is U8:
        return "uint8"
    if t is list or t is tuple:
        return "[]interface {}"
    if isinstance(v, Mapping):
        return "map[string]interface {}"
    if t is complex:
        return "complex128"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "[]interface {}"
    if callable(v):
        return "func(...interface {}) interface {}"
    return type(v).__name__


# ---------------------------------------------------------------------------------------------------------------
# Floats


def _shortest(x: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of a positive finite float and the decimal point position."""
    r = repr(x)
    mant, _, e = r.partition("e")
    exp = int(e) if e else 0
    ip, _, fp = mant.partition(".")
    digits = ip + fp
    dp = len(ip) + exp
    stripped = digits.lstrip("0")
    dp -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    return digits, dp


def _exp_text(exp: int) -> str:
    if exp < 0:
        return f"-{-exp:02d}"
    return f"+{exp:02d}"


def format_float_g(x: float, upper: bool = False) -> str:
    """Go's `strconv.FormatFloat(x, 'g', -1, 64)`, which is also `%v`."""
    if x != x:
        return "NaN"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    neg = x < 0
    digits, dp = _shortest(-x if neg else x)
    exp = dp - 1
    if exp < -4 or exp >= 6:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        s = m + ("E" if upper else "e") + _exp_text(exp)
    elif dp <= 0:
        s = "0." + "0" * (-dp) + digits
    elif dp >= len(digits):
        s = digits + "0" * (dp - len(digits))
    else:
        s = digits[:dp] + "." + digits[dp:]
    return "-" + s if neg else s


def format_float_json(x: float) -> str:
    """Go's `encoding/json` text of a float64 (plain notation between 1e-6 and 1e21)."""
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    neg = x < 0
    a = -x if neg else x
    digits, dp = _shortest(a)
    exp = dp - 1
    if a < 1e-6 or a >= 1e21:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        s = m + "e" + ("-" if exp < 0 else "+") + str(abs(exp))
    elif dp <= 0:
        s = "0." + "0" * (-dp) + digits
    elif dp >= len(digits):
        s = digits + "0" * (dp - len(digits))
    else:
        s = digits[:dp] + "." + digits[dp:]
    return "-" + s if neg else s


def _float_bits(x: float) -> tuple[bool, int, int]:
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    neg = bool(bits >> 63)
    exp = (bits >> 52) & 0x7FF
    mant = bits & ((1 << 52) - 1)
    if exp == 0:
        exp += 1
    else:
        mant |= 1 << 52
    exp -= 1023
    return neg, mant, exp


def _format_float_b(x: float) -> str:
    neg, mant, exp = _float_bits(x)
    exp -= 52
    return ("-" if neg else "") + f"{mant}p" + ("+" if exp >= 0 else "-") + str(abs(exp))


def _format_float_x(x: float, prec: int, upper: bool) -> str:
    neg, mant, exp = _float_bits(x)
    if mant == 0:
        exp = 0
    mant <<= 8
    while mant != 0 and mant & (1 << 60) == 0:
        mant <<= 1
        exp -= 1
    if 0 <= prec < 15:
        shift = prec * 4
        extra = (mant << shift) & ((1 << 60) - 1)
        mant >>= 60 - shift
        if extra | (mant & 1) > 1 << 59:
            mant += 1
        mant <<= 60 - shift
        if mant & (1 << 61):
            mant >>= 1
            exp += 1
    hexd = "0123456789ABCDEF" if upper else "0123456789abcdef"
    out = ["-" if neg else "", "0X" if upper else "0x", "1" if (mant >> 60) & 1 else "0"]
    mant = (mant << 4) & ((1 << 64) - 1)
    if prec < 0 and mant != 0:
        out.append(".")
        while mant != 0:
            out.append(hexd[(mant >> 60) & 15])
            mant = (mant << 4) & ((1 << 64) - 1)
    elif prec > 0:
        out.append(".")
        for _ in range(prec):
            out.append(hexd[(mant >> 60) & 15])
            mant = (mant << 4) & ((1 << 64) - 1)
    out.append("P" if upper else "p")
    out.append("-" if exp < 0 else "+")
    exp = abs(exp)
    out.append(f"{exp:02d}")
    return "".join(out)


def _strconv_float(x: float, verb: str, prec: int) -> str:
    """`strconv.FormatFloat(x, verb, prec, 64)` for the verbs `fmt` uses."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if verb == "b":
        return _format_float_b(x)
    if verb in "xX":
        return _format_float_x(x, prec, verb == "X")
    if prec < 0:
        if verb in "gG":
            return format_float_g(x, verb == "G")
        if verb in "eE":
            if x == 0:
                m, exp = "0", 0
            else:
                digits, dp = _shortest(abs(x))
                m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
                exp = dp - 1
            s = m + ("E" if verb == "E" else "e") + _exp_text(exp)
            return "-" + s if math.copysign(1.0, x) < 0 else s
        if x == 0:
            return "-0" if math.copysign(1.0, x) < 0 else "0"
        digits, dp = _shortest(abs(x))
        if dp <= 0:
            s = "0." + "0" * (-dp) + digits
        elif dp >= len(digits):
            s = digits + "0" * (dp - len(digits))
        else:
            s = digits[:dp] + "." + digits[dp:]
        return "-" + s if x < 0 else s
    pyverb = "f" if verb == "F" else verb
    s = format(x, f".{prec}{pyverb}")
    if s.startswith("-") and x == 0 and math.copysign(1.0, x) > 0:
        s = s[1:]
    return s


# ---------------------------------------------------------------------------------------------------------------
# Quoting


def _go_printable(c: str) -> bool:
    return c.isprintable() and not ("\udc80" <= c <= "\udcff")


_NAMED_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _escape_rune(c: str, quote: str, ascii_only: bool) -> str:
    if c == quote or c == "\\":
        return "\\" + c
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return f"\\x{o - 0xDC00:02x}"
    if ascii_only:
        if o < 0x80 and _go_printable(c):
            return c
    elif _go_printable(c):
        return c
    named = _NAMED_ESC.get(c)
    if named is not None:
        return named
    if o < 0x20 or o == 0x7F:
        return f"\\x{o:02x}"
    if 0xD800 <= o <= 0xDFFF:
        o = 0xFFFD
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def go_quote(s: str, ascii_only: bool = False) -> str:
    """`strconv.Quote` (or `QuoteToASCII`)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    return '"' + "".join(_escape_rune(c, '"', ascii_only) for c in s) + '"'


def go_quote_rune(r: int, ascii_only: bool = False) -> str:
    if r < 0 or r > 0x10FFFF or 0xD800 <= r <= 0xDFFF:
        r = 0xFFFD
    c = chr(r)
    return "'" + _escape_rune(c, "'", ascii_only) + "'"


def _can_backquote(s: str) -> bool:
    for c in s:
        o = ord(c)
        if c == "`" or c == "\ufeff" or 0xDC80 <= o <= 0xDCFF:
            return False
        if o < 0x20 and c != "\t":
            return False
        if o == 0x7F:
            return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Printing


def sorted_items(m: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    try:
        return sorted(m.items(), key=lambda kv: kv[0])
    except TypeError:
        return sorted(m.items(), key=lambda kv: (type(kv[0]).__name__, str(kv[0])))


MAX_TEXT = 64 * 1024 * 1024
"""The longest text of one list or map that is built (a list holding itself twice, forty times over, would print to
terabytes from a few kilobytes of memory)."""


def text_size(v: Any, memo: dict[int, int] | None = None) -> int:
    """About how many characters `v` prints to, without printing it; a part shared by several places is measured
    once, and the count stops soon after it passes `MAX_TEXT`."""
    if memo is None:
        memo = {}
    t = type(v)
    if t is str:
        return len(v)
    if t is list or t is tuple or isinstance(v, list | tuple):
        got = memo.get(id(v))
        if got is None:
            got = 2 + len(v)
            for e in v:
                got += text_size(e, memo)
                if got > MAX_TEXT:
                    break
            memo[id(v)] = got
        return got
    if isinstance(v, Mapping):
        got = memo.get(id(v))
        if got is None:
            got = 5 + 2 * len(v)
            for k, e in v.items():
                got += text_size(k, memo) + text_size(e, memo)
                if got > MAX_TEXT:
                    break
            memo[id(v)] = got
        return got
    return 24


def check_text_size(v: Any) -> None:
    """Raise `TextTooLarge` if the text of the list or map `v` would be longer than `MAX_TEXT`."""
    if text_size(v) > MAX_TEXT:
        raise TextTooLarge(f"the text of a value would exceed {MAX_TEXT} characters")


def value_text(v: Any) -> str:
    """`fmt.Sprint(v)` for one value: what `print` and an action show (nil is `<nil>`)."""
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if t is int:
        return str(v)
    if t is float:
        return format_float_g(v)
    if t is bool:
        return "true" if v else "false"
    if v is None or v is MISSING:
        return "<nil>"
    if t is list or t is tuple or t is dict:
        check_text_size(v)
        return _value_text(v)
    if t is Decimal:
        return format_float_g(float(v))
    p = _Printer()
    p.print_arg(v, "v")
    return "".join(p.buf)


def _value_text(v: Any) -> str:
    """`value_text` without the size check (done once, for the outermost value)."""
    t = type(v)
    if t is list or t is tuple:
        return "[" + " ".join([_value_text(e) for e in v]) + "]"
    if t is dict:
        return "map[" + " ".join([_value_text(k) + ":" + _value_text(e) for k, e in sorted_items(v)]) + "]"
    return value_text(v)


def sprint(args: list[Any]) -> str:
    """`fmt.Sprint`: spaces between operands when neither side is a string."""
    if len(args) == 1:
        return value_text(args[0])
    out: list[str] = []
    prev_string = False
    for i, a in enumerate(args):
        is_string = isinstance(a, str)
        if i > 0 and not is_string and not prev_string:
            out.append(" ")
        out.append(value_text(a))
        prev_string = is_string
    return "".join(out)


def sprintln(args: list[Any]) -> str:
    return " ".join([value_text(a) for a in args]) + "\n"


def sprintf(fmt: str, args: list[Any]) -> str:
    """`fmt.Sprintf` with Go's verbs, flags, widths, precisions, argument indexes and error notes."""
    if "%" not in fmt:
        if args:
            p = _Printer()
            p.buf.append(fmt)
            p.extra(args, 0)
            return "".join(p.buf)
        return fmt
    p = _Printer()
    p.do_printf(fmt, args)
    return "".join(p.buf)


def _too_large(x: int) -> bool:
    return x > 1_000_000 or x < -1_000_000


def _parsenum(s: str, start: int, end: int) -> tuple[int, bool, int]:
    if start >= end:
        return 0, False, end
    num = 0
    isnum = False
    i = start
    while i < end and "0" <= s[i] <= "9":
        if _too_large(num):
            return 0, False, end
        num = num * 10 + ord(s[i]) - 48
        isnum = True
        i += 1
    return num, isnum, i


class _Printer:
    __slots__ = (
        "arg",
        "buf",
        "good_arg_num",
        "minus",
        "plus",
        "plus_v",
        "prec",
        "prec_present",
        "reordered",
        "sharp",
        "sharp_v",
        "space",
        "wid",
        "wid_present",
        "zero",
    )

    def __init__(self) -> None:
        self.buf: list[str] = []
        self.arg: Any = None
        self.reordered = False
        self.good_arg_num = True
        self.clear_flags()

    def clear_flags(self) -> None:
        self.minus = self.plus = self.sharp = self.space = self.zero = False
        self.plus_v = self.sharp_v = False
        self.wid = 0
        self.prec = 0
        self.wid_present = self.prec_present = False

    # -- padding

    def write_padding(self, n: int) -> None:
        if n <= 0:
            return
        self.buf.append(("0" if self.zero and not self.minus else " ") * n)

    def pad(self, s: str) -> None:
        if not self.wid_present or self.wid == 0:
            self.buf.append(s)
            return
        width = self.wid - len(s)
        if not self.minus:
            self.write_padding(width)
            self.buf.append(s)
        else:
            self.buf.append(s)
            self.write_padding(width)

    # -- verbs

    def fmt_s(self, s: str) -> None:
        if self.prec_present:
            s = s[: self.prec]
        self.pad(s)

    def fmt_boolean(self, v: bool) -> None:
        self.pad("true" if v else "false")

    def fmt_integer(self, u: int, base: int, signed: bool, verb: str, upper: bool) -> None:
        negative = signed and u < 0
        if negative:
            u = -u
        if not signed and u < 0:
            u &= (1 << 64) - 1
        prec = 0
        if self.prec_present:
            prec = self.prec
            if prec == 0 and u == 0:
                old = self.zero
                self.zero = False
                self.write_padding(self.wid)
                self.zero = old
                return
        elif self.zero and not self.minus and self.wid_present:
            prec = self.wid
            if negative or self.plus or self.space:
                prec -= 1
        if base == 10:
            digits = str(u)
        elif base == 16:
            digits = format(u, "X" if upper else "x")
        elif base == 8:
            digits = format(u, "o")
        else:
            digits = format(u, "b")
        if prec > len(digits):
            digits = "0" * (prec - len(digits)) + digits
        if self.sharp:
            if base == 2:
                digits = "0b" + digits
            elif base == 8:
                if digits[0] != "0":
                    digits = "0" + digits
            elif base == 16:
                digits = ("0X" if upper else "0x") + digits
        if verb == "O":
            digits = "0o" + digits
        if negative:
            digits = "-" + digits
        elif self.plus:
            digits = "+" + digits
        elif self.space:
            digits = " " + digits
        old = self.zero
        self.zero = False
        self.pad(digits)
        self.zero = old

    def fmt_unicode(self, u: int) -> None:
        if u < 0:
            u &= (1 << 64) - 1
        prec = 4
        if self.prec_present and self.prec > 4:
            prec = self.prec
        s = "U+" + format(u, "X").rjust(prec, "0")
        if self.sharp and u <= 0x10FFFF and not (0xD800 <= u <= 0xDFFF) and _go_printable(chr(u)):
            s += " '" + chr(u) + "'"
        old = self.zero
        self.zero = False
        self.pad(s)
        self.zero = old

    def fmt_c(self, u: int) -> None:
        if u < 0 or u > 0x10FFFF or 0xD800 <= u <= 0xDFFF:
            u = 0xFFFD
        old = self.zero
        self.zero = False
        self.pad(chr(u))
        self.zero = old

    def fmt_qc(self, u: int) -> None:
        if u < 0 or u > 0x10FFFF:
            u = 0xFFFD
        old = self.zero
        self.zero = False
        self.pad(go_quote_rune(u, self.plus))
        self.zero = old

    def fmt_float(self, v: float, verb: str, prec: int) -> None:
        if self.prec_present:
            prec = self.prec
        num = _strconv_float(v, verb, prec)
        if num[0] in "-+":
            sign, body = num[0], num[1:]
        else:
            sign, body = "+", num
        if self.space and sign == "+" and not self.plus:
            sign = " "
        if body[:1] in ("I", "N"):
            old = self.zero
            self.zero = False
            if body[0] == "N" and not self.space and not self.plus:
                self.pad(body)
            else:
                self.pad(sign + body)
            self.zero = old
            return
        if self.sharp and verb != "b":
            body = self._sharp_float(body, verb, prec)
        if self.plus or sign != "+":
            if self.zero and not self.minus and self.wid_present and self.wid > len(body) + 1:
                self.buf.append(sign)
                self.write_padding(self.wid - len(body) - 1)
                self.buf.append(body)
                return
            self.pad(sign + body)
            return
        self.pad(body)

    def _sharp_float(self, num: str, verb: str, prec: int) -> str:
        """The `#` flag on floats: always a decimal point; %g keeps its trailing zeros (Go's rules)."""
        digits = 0
        if verb in "vgGx":
            digits = 6 if prec == -1 else prec
        tail = ""
        has_point = False
        saw_nonzero = False
        i = 0
        while i < len(num):
            ch = num[i]
            if ch == ".":
                has_point = True
            elif ch in "pP" or (ch in "eE" and verb not in "xX"):
                tail = num[i:]
                num = num[:i]
                break
            else:
                if ch != "0":
                    saw_nonzero = True
                if saw_nonzero:
                    digits -= 1
            i += 1
        if not has_point:
            if num == "0":
                digits -= 1
            num += "."
        if digits > 0:
            num += "0" * digits
        return num + tail

    def fmt_sx(self, s: str, upper: bool) -> None:
        b = to_bytes(s)
        length = len(b)
        if self.prec_present and self.prec < length:
            length = self.prec
        width = 2 * length
        if width > 0:
            if self.space:
                if self.sharp:
                    width *= 2
                width += length - 1
            elif self.sharp:
                width += 2
        else:
            if self.wid_present:
                self.write_padding(self.wid)
            return
        if self.wid_present and self.wid > width and not self.minus:
            self.write_padding(self.wid - width)
        digits = "0123456789ABCDEF" if upper else "0123456789abcdef"
        out: list[str] = []
        if self.sharp:
            out.append("0X" if upper else "0x")
        for i in range(length):
            if self.space and i > 0:
                out.append(" ")
                if self.sharp:
                    out.append("0X" if upper else "0x")
            c = b[i]
            out.append(digits[c >> 4] + digits[c & 15])
        self.buf.append("".join(out))
        if self.wid_present and self.wid > width and self.minus:
            self.write_padding(self.wid - width)

    def fmt_q(self, s: str) -> None:
        if self.prec_present:
            s = s[: self.prec]
        if self.sharp and _can_backquote(s):
            self.pad("`" + s + "`")
            return
        self.pad(go_quote(s, self.plus))

    # -- dispatch

    def bad_verb(self, verb: str) -> None:
        self.buf.append("%!" + verb + "(")
        arg = self.arg
        if arg is not None and arg is not MISSING:
            self.buf.append(go_type(arg) + "=")
            self.print_arg(arg, "v")
        else:
            self.buf.append("<nil>")
        self.buf.append(")")

    def print_arg(self, arg: Any, verb: str) -> None:
        self.arg = arg
        if arg is None or arg is MISSING:
            if verb in "Tv":
                self.pad("<nil>")
            else:
                self.bad_verb(verb)
            return
        if verb == "T":
            self.fmt_s(go_type(arg))
            return
        if verb == "p":
            self.bad_verb(verb)
            return
        if isinstance(arg, list | tuple | Mapping):
            check_text_size(arg)
        self.print_value(arg, verb, 0)

    def print_value(self, v: Any, verb: str, depth: int) -> None:
        if depth > 0:
            if v is None or v is MISSING:
                # An element that is nil is written as is: Go does not pad it.
                self.buf.append("interface {}(nil)" if self.sharp_v else "<nil>")
                return
            self.arg = v
        t = type(v)
        if t is bool:
            if verb in "tv":
                self.fmt_boolean(v)
            else:
                self.bad_verb(verb)
        elif t is int or t is U8 or (isinstance(v, int) and not isinstance(v, bool)):
            self._print_int(int(v), t is not U8, verb)
        elif t is float or t is Decimal:
            self._print_float(float(v), verb)
        elif t is str or isinstance(v, str):
            self._print_str(str(v), verb)
        elif isinstance(v, Mapping):
            sharp = self.sharp_v
            self.buf.append("map[string]interface {}{" if sharp else "map[")
            for i, (k, e) in enumerate(sorted_items(v)):
                if i > 0:
                    self.buf.append(", " if sharp else " ")
                self.print_value(k, verb, depth + 1)
                self.buf.append(":")
                self.print_value(e, verb, depth + 1)
            self.buf.append("}" if sharp else "]")
        elif isinstance(v, (list, tuple)):
            sharp = self.sharp_v
            self.buf.append("[]interface {}{" if sharp else "[")
            for i, e in enumerate(v):
                if i > 0:
                    self.buf.append(", " if sharp else " ")
                self.print_value(e, verb, depth + 1)
            self.buf.append("}" if sharp else "]")
        elif t is complex:
            self._print_complex(v, verb)
        elif isinstance(v, float):
            self._print_float(float(v), verb)
        else:
            if verb in "vs":
                self.fmt_s(_other_text(v))
            else:
                self.bad_verb(verb)

    def _print_int(self, v: int, signed: bool, verb: str) -> None:
        if verb == "v" or verb == "d":
            self.fmt_integer(v, 10, signed, verb, False)
        elif verb == "b":
            self.fmt_integer(v, 2, signed, verb, False)
        elif verb == "o" or verb == "O":
            self.fmt_integer(v, 8, signed, verb, False)
        elif verb == "x":
            self.fmt_integer(v, 16, signed, verb, False)
        elif verb == "X":
            self.fmt_integer(v, 16, signed, verb, True)
        elif verb == "c":
            self.fmt_c(v)
        elif verb == "q":
            self.fmt_qc(v)
        elif verb == "U":
            self.fmt_unicode(v)
        else:
            self.bad_verb(verb)

    def _print_float(self, v: float, verb: str) -> None:
        if verb == "v":
            self.fmt_float(v, "g", -1)
        elif verb in "bgGxX":
            self.fmt_float(v, verb, -1)
        elif verb in "feEF":
            self.fmt_float(v, verb, 6)
        else:
            self.bad_verb(verb)

    def _print_complex(self, v: complex, verb: str) -> None:
        if verb not in "vbgGxXfFeE":
            self.bad_verb(verb)
            return
        old_plus = self.plus
        self.buf.append("(")
        self._print_float(v.real, verb)
        self.plus = True
        self._print_float(v.imag, verb)
        self.buf.append("i)")
        self.plus = old_plus

    def _print_str(self, v: str, verb: str) -> None:
        if verb == "v":
            if self.sharp_v:
                self.fmt_q(v)
            else:
                self.fmt_s(v)
        elif verb == "s":
            self.fmt_s(v)
        elif verb == "x":
            self.fmt_sx(v, False)
        elif verb == "X":
            self.fmt_sx(v, True)
        elif verb == "q":
            self.fmt_q(v)
        else:
            self.bad_verb(verb)

    # -- Printf

    def _arg_number(self, arg_num: int, fmt: str, i: int, num_args: int) -> tuple[int, int, bool]:
        if len(fmt) <= i or fmt[i] != "[":
            return arg_num, i, False
        self.reordered = True
        index, wid, ok = _parse_arg_number(fmt[i:])
        if ok and 0 <= index < num_args:
            return index, i + wid, True
        self.good_arg_num = False
        return arg_num, i + wid, ok

    def do_printf(self, fmt: str, a: list[Any]) -> None:
        end = len(fmt)
        arg_num = 0
        after_index = False
        self.reordered = False
        i = 0
        buf = self.buf
        while i < end:
            self.good_arg_num = True
            lasti = i
            j = fmt.find("%", i)
            if j < 0:
                j = end
            if j > lasti:
                buf.append(fmt[lasti:j])
            i = j
            if i >= end:
                break
            i += 1
            self.clear_flags()
            simple_done = False
            while i < end:
                c = fmt[i]
                if c == "#":
                    self.sharp = True
                elif c == "0":
                    self.zero = True
                elif c == "+":
                    self.plus = True
                elif c == "-":
                    self.minus = True
                elif c == " ":
                    self.space = True
                else:
                    if "a" <= c <= "z" and arg_num < len(a):
                        if c == "v":
                            self.sharp_v = self.sharp
                            self.sharp = False
                            self.plus_v = self.plus
                            self.plus = False
                        self.print_arg(a[arg_num], c)
                        arg_num += 1
                        i += 1
                        simple_done = True
                    break
                i += 1
            if simple_done:
                continue
            arg_num, i, after_index = self._arg_number(arg_num, fmt, i, len(a))
            if i < end and fmt[i] == "*":
                i += 1
                self.wid, self.wid_present, arg_num = _int_from_arg(a, arg_num)
                if not self.wid_present:
                    buf.append("%!(BADWIDTH)")
                if self.wid < 0:
                    self.wid = -self.wid
                    self.minus = True
                    self.zero = False
                after_index = False
            else:
                self.wid, self.wid_present, i = _parsenum(fmt, i, end)
                if after_index and self.wid_present:
                    self.good_arg_num = False
            if i + 1 < end and fmt[i] == ".":
                i += 1
                if after_index:
                    self.good_arg_num = False
                arg_num, i, after_index = self._arg_number(arg_num, fmt, i, len(a))
                if i < end and fmt[i] == "*":
                    i += 1
                    self.prec, self.prec_present, arg_num = _int_from_arg(a, arg_num)
                    if self.prec < 0:
                        self.prec = 0
                        self.prec_present = False
                    if not self.prec_present:
                        buf.append("%!(BADPREC)")
                    after_index = False
                else:
                    self.prec, self.prec_present, i = _parsenum(fmt, i, end)
                    if not self.prec_present:
                        self.prec = 0
                        self.prec_present = True
            if not after_index:
                arg_num, i, after_index = self._arg_number(arg_num, fmt, i, len(a))
            if i >= end:
                buf.append("%!(NOVERB)")
                break
            verb = fmt[i]
            i += 1
            if verb == "%":
                buf.append("%")
            elif not self.good_arg_num:
                buf.append("%!" + verb + "(BADINDEX)")
            elif arg_num >= len(a):
                buf.append("%!" + verb + "(MISSING)")
            else:
                if verb == "v":
                    self.sharp_v = self.sharp
                    self.sharp = False
                    self.plus_v = self.plus
                    self.plus = False
                self.print_arg(a[arg_num], verb)
                arg_num += 1
        if not self.reordered and arg_num < len(a):
            self.extra(a, arg_num)

    def extra(self, a: list[Any], arg_num: int) -> None:
        self.clear_flags()
        self.buf.append("%!(EXTRA ")
        for i, arg in enumerate(a[arg_num:]):
            if i > 0:
                self.buf.append(", ")
            if arg is None or arg is MISSING:
                self.buf.append("<nil>")
            else:
                self.buf.append(go_type(arg) + "=")
                self.print_arg(arg, "v")
        self.buf.append(")")


def _other_text(v: Any) -> str:
    from datetime import datetime

    if isinstance(v, datetime):
        from onellm._go.timefmt import go_time_text

        return go_time_text(v)
    return str(v)


def _parse_arg_number(fmt: str) -> tuple[int, int, bool]:
    if len(fmt) < 3:
        return 0, 1, False
    for i in range(1, len(fmt)):
        if fmt[i] == "]":
            width, ok, newi = _parsenum(fmt, 1, i)
            if not ok or newi != i:
                return 0, i + 1, False
            return width - 1, i + 1, True
    return 0, 1, False


def _int_from_arg(a: list[Any], arg_num: int) -> tuple[int, bool, int]:
    num = 0
    is_int = False
    new_arg_num = arg_num
    if arg_num < len(a):
        v = a[arg_num]
        if isinstance(v, int) and not isinstance(v, bool):
            num = int(v)
            is_int = -(1 << 63) <= num < (1 << 63)
            if not is_int:
                num = 0
        new_arg_num = arg_num + 1
        if _too_large(num):
            num = 0
            is_int = False
    return num, is_int, new_arg_num
