"""Replays every case of the Go `text/template` corpus (testdata/templating, produced by running Go itself).

For each case: success must give Go's output exactly (and, where Go wrote bytes that are not UTF-8, the same bytes
through the byte-exact path); failure must fail in the same phase, with Go's error text. The differences kept on
purpose are listed in KNOWN_DIFFERENCES, with the reason, and documented in docs/templating.md; each of them is
asserted as it actually behaves, so it cannot drift silently.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from onellm.templating import Template, TemplateError, render

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "templating" / "go-text-template-cases.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]
# Cases written around Go's parse-time checks, undefined functions, `split` in loops over maps and RE2 details, also
# answered by Go itself (see the corpus README); every one must agree.
MORE = CORPUS.with_name("go-text-template-more-cases.jsonl")
MORE_CASES: list[dict[str, Any]] = [json.loads(line) for line in MORE.read_text(encoding="utf-8").split("\n") if line]

# toYaml is a OneLLM-only function; the Go program that produced the corpus did not define it, so Go fails to parse.
TOYAML = "toYaml is a OneLLM function (YAML text of a value); Go without it reports it undefined"
KNOWN_DIFFERENCES: dict[str, str] = {
    "pub-edge-01935": TOYAML,
    "pub-mutation-03717": TOYAML,
    "pub-mutation-03728": TOYAML,
    "pub-mutation-03748": TOYAML,
}


def go_message(template: str, err: TemplateError) -> str:
    """Go's err.Error() text rebuilt from the error's fields (Go counts columns in bytes, from 0)."""
    if err.kind == "parse":
        return f"template: {err.name}:{err.line}: {err.detail}"
    if err.line is None or err.offset is None:
        return f"template: {err.name}: {err.detail}"
    raw = template.encode("utf-8", "surrogatepass")
    line_start = raw.rfind(b"\n", 0, err.offset) + 1
    return f"template: {err.name}:{err.line}:{err.offset - line_start}: {err.detail}"


def run(case: dict[str, Any]) -> tuple[str, Any]:
    try:
        out = render(case["template"], case["data"], missing_key=case["missingkey"], name=case["name"])
    except TemplateError as e:
        return e.kind, e
    return "ok", out


def test_corpus_is_complete() -> None:
    meta = json.loads(CORPUS.with_name("go-text-template-cases.meta.json").read_text(encoding="utf-8"))
    assert len(CASES) == meta["cases"] == 3294


def check(case: dict[str, Any]) -> None:
    kind, got = run(case)
    if case["id"] in KNOWN_DIFFERENCES:
        # Documented difference: the corpus expects a parse error for toYaml; onellm defines it.
        assert case["error"]["phase"] == "parse"
        assert "toYaml" in case["error"]["message"]
        assert kind != "parse"
        return
    if "output" in case:
        assert kind == "ok", f"expected output, got {kind}: {got}"
        assert got == case["output"]
        if "output_b64" in case:
            tmpl = Template.parse(case["template"], name=case["name"])
            assert tmpl._render_bytes(case["data"], case["missingkey"]) == base64.b64decode(case["output_b64"])
        return
    phase = case["error"]["phase"]
    expected_kinds = {"parse": ("parse",), "exec": ("execute",)}[phase]
    assert kind in expected_kinds, f"expected a {phase} error, got {kind}: {got!r}"
    assert go_message(case["template"], got) == case["error"]["message"]


GROUPS: dict[str, list[dict[str, Any]]] = {}
for _case in CASES:
    GROUPS.setdefault(_case["group"], []).append(_case)
for _case in MORE_CASES:
    GROUPS.setdefault("more:" + _case["group"], []).append(_case)


def test_more_cases_are_complete() -> None:
    assert len(MORE_CASES) == 2252
    assert len({c["id"] for c in MORE_CASES}) == len(MORE_CASES)
    # The cases that disagreed before this corpus was added are all in it, for each class that was fixed.
    assert sum(c["onellm_before"] == "differed" for c in MORE_CASES) == 482


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_go_cases(group: str) -> None:
    """Every case of one corpus group; a failure lists each case that disagrees."""
    failures: list[str] = []
    for case in GROUPS[group]:
        try:
            check(case)
        except AssertionError as e:
            failures.append(f"{case['id']} {case['template'][:120]!r}: {e}")
    assert not failures, f"{len(failures)} of {len(GROUPS[group])} cases disagree with Go:\n" + "\n".join(failures)
