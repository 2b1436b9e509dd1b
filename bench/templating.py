"""Template rendering: onellm's Go-template engine beside Jinja2 on equivalent templates, in one run.

Run with `uv run python bench/templating.py`. Each row times one operation many times and reports the median of
several repeats, per operation; the ratio is onellm's time over Jinja2's (below 1 means onellm is faster).

Rows:
- plain text: a template with no actions.
- one field: one substitution from the scope.
- range + if: a loop over 50 records with a condition and three fields each.
- embed: a template that pulls in a registered prompt (Jinja2: `{% include %}` from a `DictLoader`).
- cached parse lookup: asking for an already parsed template by its text (Jinja2: `get_template` by name).
- cold parse: parsing and compiling a fresh template of about 30 lines.
"""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable

import jinja2

from onellm.templating import PromptEmbedSource, Template
from onellm.templating._template import _parse_cached

PLAIN_GO = "You are a careful assistant. Answer briefly and cite the sources you used.\n"
PLAIN_J2 = PLAIN_GO

FIELD_GO = "Hello {{ .name }}, welcome back.\n"
FIELD_J2 = "Hello {{ name }}, welcome back.\n"

RANGE_GO = (
    "Items:\n{{ range .items }}{{ if .active }}- {{ .name }} ({{ .sku }}): {{ .price }}\n{{ end }}{{ end }}Done.\n"
)
RANGE_J2 = (
    "Items:\n{% for item in items %}{% if item.active %}- {{ item.name }} ({{ item.sku }}): {{ item.price }}\n"
    "{% endif %}{% endfor %}Done.\n"
)

PART = "Always answer in {{ .lang }}. Keep it under {{ .limit }} words.\n"
PART_J2 = "Always answer in {{ lang }}. Keep it under {{ limit }} words.\n"
EMBED_GO = 'System rules:\n{{ embed "rules" }}User: {{ .question }}\n'
EMBED_J2 = 'System rules:\n{% include "rules" %}User: {{ question }}\n'

COLD_GO = "\n".join(
    [
        "{{/* a prompt of moderate size */}}",
        "You are {{ .agent.name }}, working for {{ .org | upper }}.",
        "{{ if .user }}The user is {{ .user.name }} ({{ .user.role }}).{{ else }}The user is anonymous.{{ end }}",
        "{{ range $i, $t := .tools }}{{ if $i }}, {{ end }}{{ $t.name }}{{ end }}",
        "{{ with .context }}Context:\n{{ . | indent 2 }}{{ end }}",
        "{{ range .rules }}- {{ . }}\n{{ else }}No rules.\n{{ end }}",
        'Today is {{ .date }}. {{ printf "%d tools" (len .tools) }}.',
    ]
    * 4
)
COLD_J2 = "\n".join(
    [
        "{# a prompt of moderate size #}",
        "You are {{ agent.name }}, working for {{ org | upper }}.",
        "{% if user %}The user is {{ user.name }} ({{ user.role }}).{% else %}The user is anonymous.{% endif %}",
        "{% for t in tools %}{% if not loop.first %}, {% endif %}{{ t.name }}{% endfor %}",
        "{% if context %}Context:\n{{ context | indent(2, true) }}{% endif %}",
        "{% for r in rules %}- {{ r }}\n{% else %}No rules.\n{% endfor %}",
        "Today is {{ date }}. {{ '%d tools' % (tools | length) }}.",
    ]
    * 4
)

ITEMS = [{"name": f"Widget {i}", "sku": f"W-{i:04d}", "price": 10 + i, "active": i % 3 != 0} for i in range(50)]


def best_per_op(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number


def fmt_time(s: float) -> str:
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    return f"{s * 1e3:.2f} ms"


def main() -> int:
    env = jinja2.Environment(
        loader=jinja2.DictLoader({"rules": PART_J2, "page": RANGE_J2}), autoescape=False, keep_trailing_newline=True
    )
    rows: list[tuple[str, float, float]] = []

    # plain text
    go = Template.parse(PLAIN_GO)
    j2 = env.from_string(PLAIN_J2)
    assert go.render({}) == j2.render({})
    rows.append(("plain text", best_per_op(lambda: go.render({}), 20000), best_per_op(lambda: j2.render({}), 20000)))

    # one field
    go_f = Template.parse(FIELD_GO)
    j2_f = env.from_string(FIELD_J2)
    scope_f = {"name": "Ada"}
    assert go_f.render(scope_f) == j2_f.render(scope_f)
    rows.append(
        (
            "one field",
            best_per_op(lambda: go_f.render(scope_f), 20000),
            best_per_op(lambda: j2_f.render(scope_f), 20000),
        )
    )

    # range + if
    go_r = Template.parse(RANGE_GO)
    j2_r = env.from_string(RANGE_J2)
    scope_r = {"items": ITEMS}
    assert go_r.render(scope_r) == j2_r.render(scope_r), (go_r.render(scope_r), j2_r.render(scope_r))
    rows.append(
        (
            "range + if (50 items)",
            best_per_op(lambda: go_r.render(scope_r), 1000),
            best_per_op(lambda: j2_r.render(scope_r), 1000),
        )
    )

    # embed
    sources = [PromptEmbedSource({"rules": PART})]
    go_e = Template.parse(EMBED_GO)
    j2_e = env.from_string(EMBED_J2)
    scope_e = {"lang": "English", "limit": 50, "question": "Why is the sky blue?"}
    assert go_e.render(scope_e, embed_sources=sources) == j2_e.render(scope_e)
    rows.append(
        (
            "embed",
            best_per_op(lambda: go_e.render(scope_e, embed_sources=sources), 10000),
            best_per_op(lambda: j2_e.render(scope_e), 10000),
        )
    )

    # cached parse lookup
    Template.parse(RANGE_GO)
    env.get_template("page")
    rows.append(
        (
            "cached parse lookup",
            best_per_op(lambda: Template.parse(RANGE_GO), 50000),
            best_per_op(lambda: env.get_template("page"), 50000),
        )
    )

    # cold parse (parse + compile, no cache)
    cold = _parse_cached.__wrapped__
    rows.append(
        (
            "cold parse (~30 lines)",
            best_per_op(lambda: cold(COLD_GO, "template", True, None), 50, repeat=5),
            best_per_op(lambda: env.from_string(COLD_J2), 50, repeat=5),
        )
    )

    print(f"Python {sys.version.split()[0]}, Jinja2 {jinja2.__version__}; median of repeats, per operation\n")
    print("| row | onellm | Jinja2 | onellm / Jinja2 |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for name, a, b in rows:
        ratio = a / b
        worst = max(worst, ratio)
        print(f"| {name} | {fmt_time(a)} | {fmt_time(b)} | {ratio:.2f} |")
    print()
    print("every row at least as fast as Jinja2" if worst <= 1.0 else f"slowest ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
