"""`render()` and `Template.render` bound the output, every value a function makes, and the time a render takes."""

from __future__ import annotations

import threading
import time

import pytest

from onellm.templating import Template, TemplateError, render

DOUBLING = '{{ $x := "ab" }}{{ range 60 }}{{ $x = printf "%s%s" $x $x }}{{ end }}{{ len $x }}'
NESTED = "{{ $l := list 1 }}{{ range 60 }}{{ $l = list $l $l }}{{ end }}"


@pytest.mark.timeout(30)  # a hang guard: without the limits these run for minutes and take gigabytes
def test_a_string_doubled_in_a_loop_stops_at_the_output_limit() -> None:
    with pytest.raises(TemplateError) as info:
        render(DOUBLING)
    e = info.value
    assert (e.kind, e.line, e.column) == ("limit", 1, 39)
    assert e.detail == 'executing "template" at <printf "%s%s" $x $x>: printf: the result exceeds the output limit'
    with pytest.raises(TemplateError, match="printf: the result exceeds the output limit"):
        render(DOUBLING, max_output=1000)
    # Below the limit the same template works.
    assert render(DOUBLING.replace("60", "5")) == str(2 * 2**5)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("tail", "detail"),
    [
        ("{{ $l }}", "the text of a value would exceed 67108864 characters"),
        ("{{ print $l }}", "at <print $l>: print: the result exceeds the output limit"),
        ('{{ printf "%v" $l }}', "printf: the result exceeds the output limit"),
        ("{{ toJson $l }}", "toJson: the result exceeds the output limit"),
        ("{{ toYaml $l }}", "toYaml: the result exceeds the output limit"),
        ('{{ join "," $l }}', "join: the result exceeds the output limit"),
    ],
)
def test_a_list_that_holds_itself_twice_over_is_not_printed(tail: str, detail: str) -> None:
    with pytest.raises(TemplateError) as info:
        render(NESTED + tail)
    assert info.value.kind == "limit"
    assert detail in info.value.detail


def test_the_output_limit_is_configurable_on_render() -> None:
    assert render("{{ .s }}", {"s": "x" * 10}, max_output=10) == "x" * 10
    with pytest.raises(TemplateError) as info:
        render("{{ .s }}", {"s": "x" * 11}, max_output=10)
    assert (info.value.kind, info.value.detail) == ("limit", "output exceeds the limit of 10 characters")
    with pytest.raises(TemplateError, match="upper: the result exceeds the output limit"):
        render("{{ upper .s }}", {"s": "x" * 11}, max_output=10)


@pytest.mark.timeout(30)
def test_a_render_stops_at_its_time_limit() -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError) as info:
        render("{{ range 1000000000 }}{{ end }}", timeout=0.2)
    assert info.value.kind == "limit"
    assert info.value.detail == (
        'executing "template" at <1000000000>: rendering took longer than the limit of 0.2 seconds'
    )
    assert (info.value.line, info.value.column) == (1, 10)
    assert time.monotonic() - started < 10
    # The same bound on Template.render, with the host hooks too, and through nested template calls.
    looping = Template.parse(
        '{{ define "t" }}{{ range 1000 }}x{{ end }}{{ end }}{{ range 1000000 }}{{ template "t" }}{{ end }}'
    )
    for kwargs in ({}, {"cancel": threading.Event()}):
        with pytest.raises(TemplateError, match=r"rendering took longer than the limit of 0\.2 seconds"):
            looping.render(timeout=0.2, max_output=10**12, **kwargs)  # type: ignore[arg-type]


def test_the_default_limits() -> None:
    import inspect

    from onellm.templating._template import TIMEOUT

    assert TIMEOUT == 10.0
    for fn in (render, Template.render):
        params = inspect.signature(fn).parameters
        assert params["timeout"].default == 10.0
        assert params["max_output"].default == 64 * 1024 * 1024
    assert render("{{ range 100 }}{{ . }}{{ end }}", timeout=None).endswith("9899")


@pytest.mark.parametrize("kwargs", [{"timeout": 0}, {"timeout": -1.0}, {"max_output": -1}, {"max_output": 1.5}])
def test_bad_limits_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="must be"):
        render("x", **kwargs)  # type: ignore[arg-type]
