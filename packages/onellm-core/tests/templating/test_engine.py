"""The engine's own behaviour beyond the Go corpus: options, OneLLM functions, embed, errors, limits, threads."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from onellm.templating import FileEmbedSource, PromptEmbedSource, Template, TemplateError, render


def fails(text: str, scope: object = None, **options: object) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        render(text, scope, **options)  # type: ignore[arg-type]
    return info.value


# -- the public face


def test_render_example_from_the_docs() -> None:
    assert render("Hello {{ .inputs.name | upper }}", {"inputs": {"name": "ada"}}) == "Hello ADA"


def test_parse_is_cached_and_templates_are_immutable() -> None:
    a = Template.parse("{{ .x }} and {{ .y }}")
    b = Template.parse("{{ .x }} and {{ .y }}")
    assert a is b
    assert Template.parse("{{ .x }} and {{ .y }}", name="other") is not a
    assert a.render({"x": 1, "y": 2}) == "1 and 2"
    assert a.render({"x": 3}) == "3 and <no value>"
    with pytest.raises(AttributeError):
        a.extra = 1  # type: ignore[attr-defined]


def test_template_names_lists_defines_and_blocks() -> None:
    t = Template.parse('{{define "a"}}A{{end}}{{block "b" .}}B{{end}}', name="main")
    assert t.template_names == ["a", "b", "main"]
    assert t.name == "main"
    assert t.render() == "B"


def test_non_string_text_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Template.parse(b"{{ .x }}")  # type: ignore[arg-type]


# -- missing keys


def test_missing_key_default_prints_no_value_and_error_names_the_key() -> None:
    assert render("[{{ .a.missing }}]", {"a": {}}) == "[<no value>]"
    e = fails("line one\n  {{ .a.missing }}", {"a": {}}, missing_key="error")
    assert e.kind == "execute"
    # Like Go, a field chain is located at its last field.
    assert (e.line, e.column) == (2, 8)
    assert 'map has no entry for key "missing"' in e.detail
    assert "<.a.missing>" in e.detail


def test_unknown_missing_key_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="missing_key"):
        render("x", {}, missing_key="sometimes")  # type: ignore[arg-type]


# -- errors with positions


def test_parse_error_carries_name_line_column_and_byte_offset() -> None:
    e = fails("héllo\nwörld {{ if }}", name="greeting")
    assert e.kind == "parse"
    assert e.name == "greeting"
    assert e.line == 2
    assert e.detail == "missing value for if"
    # The column counts characters (1-based); the offset counts UTF-8 bytes from the start.
    assert e.column == 13
    assert e.offset == len("héllo\nwörld {{ if ".encode())
    assert str(e).startswith("greeting:2:13: parse error:")


def test_execute_error_points_at_the_failing_action() -> None:
    e = fails("ok {{ len 3 }}")
    assert e.kind == "execute"
    assert (e.line, e.column, e.offset) == (1, 7, 6)
    assert e.detail == 'executing "template" at <len 3>: error calling len: len of type int'


def test_errors_inside_a_define_name_the_define_but_point_into_the_text() -> None:
    e = fails('{{define "row"}}\n{{ .x.y }}{{end}}{{template "row" 5}}')
    assert e.name == "template"
    assert e.line == 2
    assert 'executing "row"' in e.detail


# -- values


def test_decimal_values_behave_as_float64() -> None:
    scope = {"price": Decimal("12.50"), "big": Decimal("1E+7")}
    assert render('{{ .price }} {{ .big }} {{ printf "%T %.1f" .price .price }}', scope) == "12.5 1e+07 float64 12.5"
    assert render("{{ toJson .price }} {{ eq .price 12.5 }}", scope) == "12.5 true"


def test_tuples_and_other_mappings_are_lists_and_maps() -> None:
    from types import MappingProxyType

    scope = {"t": (1, 2), "m": MappingProxyType({"b": 2, "a": 1})}
    assert render("{{ .t }} {{ len .t }} {{ .m }} {{ .m.a }} {{ range $k, $v := .m }}{{ $k }}{{ end }}", scope) == (
        "[1 2] 2 map[a:1 b:2] 1 ab"
    )


def test_none_scope_is_no_value() -> None:
    assert render("{{ . }}|{{ .x }}") == "<no value>|<no value>"
    assert fails("{{ .x }}", None, missing_key="error").detail.endswith('nil data; no entry for key "x"')


def test_invalid_utf8_from_slice_is_replaced_in_text_but_counted_as_bytes() -> None:
    assert (
        render('{{ slice "é" 0 1 }}|{{ len (slice "é" 0 1) }}|{{ printf "%q" (slice "é" 0 1) }}') == '\ufffd|1|"\\xc3"'
    )


# -- standard and OneLLM functions


def test_string_and_path_functions() -> None:
    text = (
        '{{ lower "ÀB" }} {{ upper "straße" }} [{{ trim "\\u00a0 x \\u3000" }}] {{ trimPrefix "abc" "a" }} '
        '{{ replace "a.b" "." "/" }} {{ contains "abc" "b" }} {{ base "a/b.txt" }} {{ dir "a/b.txt" }} '
        '{{ ext "a/b.txt" }} {{ trimExt "a/b.txt" }} {{ pathJoin "a" "../b" "c" }} {{ isAbs "/x" }} {{ raw "{{" }}'
    )
    assert render(text) == "àb STRAßE [x] bc a/b true b.txt a .txt a/b b/c true {{"


def test_list_functions_and_json() -> None:
    text = (
        '{{ join ", " (split "," "a,b,c") }}|{{ indent 2 "a\\nb" }}|{{ nindent 1 "x" }}|{{ truncate 2 "héllo" }}|'
        '{{ toJson (dict "b" (list 1 2.5 nil) "a" "<&>") }}|{{ default "d" "" }}'
    )
    assert render(text) == 'a, b, c|  a\n  b|\n x|hé|{"a":"<&>","b":[1,2.5,null]}|d'
    assert render("{{ toPrettyJson . }}", {"k": [1], "e": {}}) == '{\n  "e": {},\n  "k": [\n    1\n  ]\n}'


def test_to_yaml_writes_block_yaml() -> None:
    scope = {"name": "ada", "tags": ["a", "b"], "nested": {"count": 1, "empty": ""}, "flag": True, "none": None}
    assert render("{{ toYaml . }}", scope) == (
        'name: ada\ntags:\n- a\n- b\nnested:\n  count: 1\n  empty: ""\nflag: true\nnone: null\n'
    )
    assert render("{{ toYaml . }}", [{"a": "yes", "b": "1.5"}]) == '- a: "yes"\n  b: "1.5"\n'


def test_regex_functions_follow_re2() -> None:
    assert render('{{ regexMatch "^\\\\d+$" "٣" }} {{ regexMatch "[[:alpha:]]" "é" }}') == "false false"
    assert render('{{ regexReplace "(?P<w>\\\\w+)@(\\\\w+)" "${2}.$w" "me@host" }}') == "host.me"
    assert render('{{ regexReplace "x*" "-" "abxd" }}') == "-a-b-d-"
    e = fails('{{ regexMatch "(?=a)" "a" }}')
    assert "invalid or unsupported Perl syntax" in e.detail


def test_now_and_date_use_the_time_provider() -> None:
    fixed = datetime(2024, 3, 5, 14, 7, 9, 500000, tzinfo=timezone(timedelta(hours=2)))
    text = '{{ now | date "2006-01-02 15:04:05.000 -07:00 Mon Jan" }}'
    assert render(text, now=lambda: fixed) == "2024-03-05 14:07:09.500 +02:00 Tue Mar"
    assert render('{{ date "Jan 2, 2006 at 3:04pm (MST)" "2024-12-31T23:05:00Z" }}') == "Dec 31, 2024 at 11:05pm (UTC)"
    e = fails("{{ now }}")
    assert "no time provider" in e.detail
    e = fails('{{ date "2006" "yesterday" }}')
    assert "RFC 3339" in e.detail
    assert render("{{ now }}", now=lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02 03:04:05 +0000 UTC"


def test_host_functions_are_added_and_can_replace_standard_ones() -> None:
    funcs = {"shout": lambda s: str(s).upper() + "!", "upper": lambda s: f"<{s}>"}
    assert render("{{ shout .x }} {{ upper .x }} {{ .x | shout }}", {"x": "hi"}, functions=funcs) == "HI! <hi> HI!"
    # Without the host set, the standard upper is back (templates are cached per function set).
    assert render("{{ upper .x }}", {"x": "hi"}) == "HI"
    e = fails("{{ boom }}", functions={"boom": lambda: 1 / 0})
    assert e.detail.endswith("error calling boom: division by zero")
    e = fails("{{ nosuch }}", functions={"boom": lambda: 1})
    assert e.kind == "parse"
    with pytest.raises(ValueError, match="identifier"):
        render("x", functions={"bad-name": lambda: 1})


def test_host_function_arity_is_checked_like_go() -> None:
    e = fails('{{ two "a" }}', functions={"two": lambda a, b: a + b})
    assert e.detail.endswith("wrong number of args for two: want 2 got 1")
    assert render('{{ many "a" "b" "c" }}', functions={"many": lambda *xs: "".join(xs)}) == "abc"


def test_call_runs_callables_from_the_scope() -> None:
    assert render("{{ call .f 2 3 }}", {"f": lambda a, b: a * b}) == "6"
    assert "non-function .x of type int" in fails("{{ call .x }}", {"x": 1}).detail


# -- code regions


def test_code_regions_print_delimiters_literally() -> None:
    scope = {"name": "ada"}
    text = "Use `{{ .name }}` for the name, {{ .name }}.\n```go\nt := `{{ .x }}`\n```\n~~~\n{{ nope }}\n~~~\nbye {{ .name }}"
    assert render(text, scope) == (
        "Use `{{ .name }}` for the name, ada.\n```go\nt := `{{ .x }}`\n```\n~~~\n{{ nope }}\n~~~\nbye ada"
    )


def test_code_regions_can_be_turned_off() -> None:
    assert render("`{{ .name }}`", {"name": "ada"}, escape_code_regions=False) == "`ada`"


def test_unmatched_backticks_and_unclosed_fences() -> None:
    assert render("a ` b {{ .x }}", {"x": 1}) == "a ` b 1"
    assert render("``x` {{ .x }}", {"x": 1}) == "``x` 1"
    assert render("text\n```\n{{ .x }} never closed", {"x": 1}) == "text\n```\n{{ .x }} never closed"


def test_backticks_inside_actions_are_raw_strings_not_code() -> None:
    assert render("{{ `raw` }} and {{ printf `%s` .x }}", {"x": "y"}) == "raw and y"


def test_error_positions_refer_to_the_original_text_with_code_regions() -> None:
    e = fails("`{{ not code }}`\n{{ .a.b }}", {"a": 1})
    assert (e.line, e.column) == (2, 6)


# -- embed


def test_embed_renders_registered_prompts_in_the_same_scope() -> None:
    prompts = PromptEmbedSource({"rules": "Answer in {{ .lang }}.", "outer": '[{{ embed "rules" }}]'})
    assert render('{{ embed "outer" }} {{ .lang }}', {"lang": "French"}, embed_sources=[prompts]) == (
        "[Answer in French.] French"
    )


def test_embed_has_no_source_by_default() -> None:
    e = fails('{{ embed "x" }}')
    assert e.kind == "embed"
    assert "no embed source is configured" in e.detail


def test_embed_sources_are_tried_in_order() -> None:
    seen: list[str] = []

    def host(ref: str) -> str | None:
        seen.append(ref)
        return "host:" + ref

    first = PromptEmbedSource({"a": "prompt-a"})
    assert render('{{ embed "a" }} {{ embed "b" }}', embed_sources=[first, host]) == "prompt-a host:b"
    assert seen == ["b"]
    e = fails('{{ embed "zz" }}', embed_sources=[first])
    assert e.kind == "embed"
    assert "not found" in e.detail


def test_embed_cycle_fails_with_the_chain_at_the_embed_call() -> None:
    prompts = PromptEmbedSource({"a": 'A{{ embed "b" }}', "b": 'B\n  {{ embed "a" }}'})
    e = fails('top {{ embed "a" }}', embed_sources=[prompts])
    assert e.kind == "embed"
    assert e.detail.endswith("embed cycle: a -> b -> a")
    assert (e.name, e.line, e.column) == ("b", 2, 6)


def test_embed_depth_is_limited_to_sixteen() -> None:
    prompts = {f"p{i}": f'{{{{ embed "p{i + 1}" }}}}' for i in range(30)}
    e = fails('{{ embed "p0" }}', embed_sources=[PromptEmbedSource(prompts)])
    assert e.kind == "limit"
    assert "nesting deeper than 16 levels" in e.detail
    assert e.name == "p15"
    chain = {f"p{i}": f'{{{{ embed "p{i + 1}" }}}}' for i in range(15)} | {"p15": "end"}
    assert render('{{ embed "p0" }}', embed_sources=[PromptEmbedSource(chain)]) == "end"


def test_embed_errors_inside_the_embedded_prompt_name_it() -> None:
    e = fails('{{ embed "bad" }}', embed_sources=[PromptEmbedSource({"bad": "ok\n{{ if }}"})])
    assert (e.kind, e.name, e.line) == ("parse", "bad", 2)


def test_file_embed_source_is_confined_to_its_root(tmp_path: Path) -> None:
    root = tmp_path / "prompts"
    (root / "parts").mkdir(parents=True)
    (root / "parts" / "a.md").write_text('A({{ embed "b.md" }})', encoding="utf-8")
    (root / "parts" / "b.md").write_text("B{{ .n }}", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    src = FileEmbedSource(root)
    # Relative to the including file: a.md finds b.md beside it.
    assert render('{{ embed "parts/a.md" }}', {"n": 1}, embed_sources=[src]) == "A(B1)"
    for ref in ("../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd"):
        e = fails(f"{{{{ embed {ref!r} }}}}".replace("'", '"'), embed_sources=[src])
        assert "not found" in e.detail


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
def test_file_embed_source_resolves_symbolic_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.md").write_text("outside", encoding="utf-8")
    (root / "inside.md").write_text("inside", encoding="utf-8")
    (root / "escape.md").symlink_to(tmp_path / "outside.md")
    (root / "alias.md").symlink_to(root / "inside.md")
    src = FileEmbedSource(root)
    assert render('{{ embed "alias.md" }}', embed_sources=[src]) == "inside"
    assert "not found" in fails('{{ embed "escape.md" }}', embed_sources=[src]).detail


# -- limits and cancellation


def test_output_is_limited() -> None:
    t = Template.parse("{{ range 100 }}{{ $.s }}{{ end }}")
    e = None
    with pytest.raises(TemplateError) as info:
        t.render({"s": "x" * 1000}, max_output=50_000)
    e = info.value
    assert e.kind == "limit"
    assert t.render({"s": "x" * 10}, max_output=50_000) == "x" * 1000


def test_functions_that_would_explode_hit_the_limit() -> None:
    e = fails('{{ replace .s "" .s }}', {"s": "x" * 10_000})
    assert e.kind == "limit"


def test_cancellation_stops_a_long_render() -> None:
    stop = threading.Event()
    stop.set()
    e = fails("ok\n  {{ range 1000000 }}{{ end }}", cancel=stop)
    assert e.kind == "limit"
    assert "cancelled" in e.detail
    # The position is that of the loop that was running.
    assert (e.line, e.column) == (2, 12)
    calls = iter(range(10**9))
    e = fails("{{ range 1000000 }}x{{ end }}", cancel=lambda: next(calls) > 3)
    assert "cancelled" in e.detail


def test_deep_template_recursion_is_an_execute_error() -> None:
    e = fails('{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}')
    assert e.kind == "execute"
    assert e.detail.endswith("exceeded maximum template depth (100000)")


def test_deep_nesting_in_the_text_is_a_parse_error_not_a_crash() -> None:
    e = fails("{{ " + "(" * 500 + "1" + ")" * 500 + " }}")
    assert e.kind == "parse"
    e = fails("{{ if 1 }}" * 400 + "x" + "{{ end }}" * 400)
    assert e.kind == "parse"


# -- concurrency


def test_one_template_renders_in_many_threads_at_once() -> None:
    t = Template.parse("{{ range .items }}{{ if .ok }}{{ .n }},{{ end }}{{ end }}{{ $x := .tag }}{{ $x }}")

    def job(i: int) -> str:
        items = [{"n": i * 100 + k, "ok": k % 2 == 0} for k in range(50)]
        return t.render({"items": items, "tag": f"#{i}"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(job, range(64)))
    for i, out in enumerate(results):
        expected = "".join(f"{i * 100 + k}," for k in range(0, 50, 2)) + f"#{i}"
        assert out == expected


def test_times_serialize_as_rfc3339_in_json_and_yaml() -> None:
    t = datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=timezone(timedelta(hours=-5)))
    assert (
        render("{{ toJson .t }}|{{ toYaml .t }}", {"t": t})
        == '"2024-01-02T03:04:05.12-05:00"|2024-01-02T03:04:05.12-05:00\n'
    )


def test_a_custom_source_sees_the_base_of_the_including_prompt() -> None:
    from onellm.templating import Embedded

    calls: list[tuple[str, str | None]] = []

    class Folders:
        def load(self, ref: str, base: str | None) -> Embedded | None:
            calls.append((ref, base))
            texts = {"docs/a": '{{ embed "b" }}', "docs/b": "B"}
            key = ref if base is None else base.rsplit("/", 1)[0] + "/" + ref
            text = texts.get(key)
            return None if text is None else Embedded(key=key, text=text, name=ref, base=key)

    assert render('{{ embed "docs/a" }}', embed_sources=[Folders()]) == "B"
    assert calls == [("docs/a", None), ("b", "docs/a")]


def test_embedded_prompts_share_the_code_region_option() -> None:
    prompts = PromptEmbedSource({"p": "`{{ .x }}` {{ .x }}"})
    assert render('{{ embed "p" }}', {"x": 1}, embed_sources=[prompts]) == "`{{ .x }}` 1"
    assert render('{{ embed "p" }}', {"x": 1}, embed_sources=[prompts], escape_code_regions=False) == "`1` 1"


def test_runs_of_text_and_fields_give_the_same_output_on_every_path() -> None:
    """Text and `{{ .field }}` runs are compiled into one generated function for dict dots; other dots, and the
    error mode, take the per-node path. Both must agree."""
    from types import MappingProxyType

    text = "a{{ .s }}b{{ .n }}c{{ .f }}d{{ .z }}e{{ .l }}f{{ .missing }}g"
    data = {"s": "x", "n": 3, "f": 1.5, "z": None, "l": [1, "y"]}
    expected = "axb3c1.5d<no value>e[1 y]f<no value>g"
    assert render(text, data) == expected
    assert render(text, MappingProxyType(data)) == expected
    e = fails(text, data, missing_key="error")
    assert e.detail.endswith('map has no entry for key "missing"')
    assert render(text.replace("{{ .missing }}", ""), data, missing_key="error") == expected.replace("<no value>g", "g")
    assert "can't evaluate field s in type int" in fails(text, 5).detail


def test_now_accepts_a_clock() -> None:
    from onellm.clock import FakeClock

    clock = FakeClock(datetime(2025, 6, 1, 8, 30, tzinfo=UTC))
    assert render('{{ now | date "2006-01-02 15:04" }}', now=clock) == "2025-06-01 08:30"
    clock.advance(3600)
    assert render('{{ now | date "15:04" }}', now=clock) == "09:30"


def test_printf_sharp_v_writes_go_syntax() -> None:
    scope = {"l": [1, "a", None], "m": {"b": 2.5, "a": True}}
    assert render('{{ printf "%#v" .l }}|{{ printf "%#v" .m }}|{{ printf "%#v" "q" }}', scope) == (
        '[]interface {}{1, "a", interface {}(nil)}|map[string]interface {}{"a":true, "b":2.5}|"q"'
    )


def test_regex_unicode_classes_and_their_negations() -> None:
    text = (
        '{{ regexMatch "^\\\\p{Greek}+$" "αβγ" }} {{ regexMatch "^[\\\\P{Greek}]+$" "aβ" }} '
        '{{ regexMatch "\\\\p{^L}" "a" }} {{ regexMatch "\\\\PL" "1" }} {{ regexMatch "[^\\\\pL]" "é" }}'
    )
    assert render(text) == "true false false true false"


def test_a_failing_embed_source_is_an_embed_error(tmp_path: Path) -> None:
    def broken(ref: str) -> str | None:
        raise OSError("disk on fire")

    e = fails('{{ embed "x" }}', embed_sources=[broken])
    assert e.kind == "embed"
    assert "disk on fire" in e.detail
    assert "not found" in fails('{{ embed "a\\x00b" }}', embed_sources=[FileEmbedSource(tmp_path)]).detail
