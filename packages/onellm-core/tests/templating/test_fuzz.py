"""Random input never breaks the engine: parsing and rendering raise TemplateError or nothing.

The inputs are built from pieces of the language (delimiters, trim markers, keywords, operators, literals,
functions), so most of them get deep into the parser rather than failing on the first character. Bounded by
`max_examples`; renders are cut by an output limit and a time-based cancel.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.templating import Template, TemplateError

PIECES = [
    "{{",
    "}}",
    "{{- ",
    " -}}",
    "{{/*",
    "*/}}",
    " ",
    "\n",
    "`",
    "```\n",
    '"',
    "'",
    "(",
    ")",
    "|",
    ":=",
    "=",
    ",",
    ".",
    "$",
    "$x",
    ".a",
    ".b.c",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define",
    "block",
    "template",
    "break",
    "continue",
    "nil",
    "true",
    "1",
    "-2",
    "0x1F",
    "1e3",
    "'a'",
    '"s"',
    '"t"',
    "`r`",
    "len",
    "index",
    "slice",
    "printf",
    '"%v %d %5.2f %q"',
    "print",
    "eq",
    "lt",
    "and",
    "or",
    "not",
    "call",
    "html",
    "js",
    "urlquery",
    "upper",
    "join",
    "split",
    "dict",
    "list",
    "toJson",
    "default",
    "regexMatch",
    '"a*"',
    '"(x"',
    "indent",
    "truncate",
    "embed",
    "é",
    "日本",
    "\x00",
]

SCOPE = {"a": {"x": 1, "y": [1, 2, "z", None]}, "b": {"c": "héllo"}, "l": [3, 1, 2], "n": 5, "s": "str", "z": None}


def check(text: str) -> None:
    """Parse and render `text`; any exception other than TemplateError (of a fitting kind) fails the test."""
    try:
        tmpl = Template.parse(text)
    except TemplateError as e:
        parse_kind = e.kind
    else:
        parse_kind = ""
    if parse_kind:
        assert parse_kind == "parse"
        return
    deadline = time.monotonic() + 0.5
    kinds: list[str] = []
    for mode in ("default", "error"):
        try:
            tmpl.render(SCOPE, missing_key=mode, max_output=100_000, cancel=lambda: time.monotonic() > deadline)  # type: ignore[arg-type]
        except TemplateError as e:
            kinds.append(e.kind)
    assert set(kinds) <= {"execute", "embed", "limit"}


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_language_pieces_parse_and_render_or_fail_cleanly(text: str) -> None:
    check(text)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from("{}-/*()|$.:=\"'`\\ \n\tabx019eé"), max_size=60))
def test_random_characters_parse_and_render_or_fail_cleanly(text: str) -> None:
    check(text)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=40).map(lambda s: "{{ " + s + " }}"))
def test_arbitrary_text_inside_an_action(text: str) -> None:
    check(text)


def outcome(text: str, scope: object, **options: object) -> tuple[str, str]:
    try:
        return "ok", Template.parse(text).render(scope, max_output=100_000, **options)  # type: ignore[arg-type]
    except TemplateError as e:
        return e.kind, e.detail


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_fast_paths_agree_with_the_general_ones(text: str) -> None:
    """Plain dicts take compiled fast paths; other mappings take the general ones. Results must not differ."""
    from types import MappingProxyType

    try:
        Template.parse(text)
    except TemplateError:
        return
    proxy = MappingProxyType({k: MappingProxyType(v) if isinstance(v, dict) else v for k, v in SCOPE.items()})
    deadline = time.monotonic() + 0.5
    cancel = lambda: time.monotonic() > deadline  # noqa: E731
    fast = outcome(text, SCOPE, cancel=cancel)
    general = outcome(text, proxy, cancel=cancel)
    if "limit" not in (fast[0], general[0]):
        assert fast == general
