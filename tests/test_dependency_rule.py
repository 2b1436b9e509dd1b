"""Every distribution depends on exactly what the design allows, and nothing else."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"

# distribution -> the runtime dependencies it may have (normalised names), besides onellm-core where noted
ALLOWED: dict[str, set[str]] = {
    "onellm-core": {"httpx", "msgspec", "ruamel-yaml", "anyio", "opentelemetry-api"},
    "onellm-web": {"onellm-core", "markdownify"},
    "onellm-js": {"onellm-core", "quickjs-ng"},
    "onellm-sqlalchemy": {"onellm-core", "sqlalchemy"},
    "onellm-sqlite": {"onellm-core"},
    "onellm-cli": {"onellm-core", "typer"},
}
CLI_EXTRAS = {"web": {"onellm-web"}, "js": {"onellm-js"}, "all": {"onellm-web", "onellm-js"}}
IMPORT_NAMES = {
    "onellm-core": "onellm",
    "onellm-web": "onellm_web",
    "onellm-js": "onellm_js",
    "onellm-sqlalchemy": "onellm_sqlalchemy",
    "onellm-sqlite": "onellm_sqlite",
    "onellm-cli": "onellm_cli",
}
DEV_TOOLS = {"pytest", "pytest-timeout", "hypothesis", "opentelemetry-sdk", "ruff", "mypy", "pyright", "anyio"}

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> tuple[str, str, str]:
    """(normalised name, extras, the rest: specifier and marker)."""
    match = _NAME.match(text)
    if match is None:
        raise ValueError(f"cannot read requirement {text!r}")
    return normalise(match.group(1)), match.group(2) or "", match.group(3).strip()


def dependency_problems(name: str, project: dict[str, Any]) -> list[str]:
    """What is wrong with one distribution's runtime dependencies. Empty when it follows the rule."""
    problems: list[str] = []
    allowed = ALLOWED[name]
    seen: set[str] = set()
    for requirement in project.get("dependencies", []):
        dep, _extras, rest = parse_requirement(requirement)
        seen.add(dep)
        if dep not in allowed:
            problems.append(f"{name} may not depend on {dep!r} (allowed: {sorted(allowed)})")
        if dep.startswith("onellm-"):
            problems.extend(_sibling_range_problems(name, dep, rest))
        if dep in DEV_TOOLS and dep not in allowed:
            problems.append(f"{name}: {dep!r} is a dev tool and belongs in a dependency group")
    missing = allowed - seen
    if missing:
        problems.append(f"{name} lacks its dependencies {sorted(missing)}")
    extras = project.get("optional-dependencies", {})
    expected_extras = CLI_EXTRAS if name == "onellm-cli" else {}
    if set(extras) != set(expected_extras):
        problems.append(f"{name} has extras {sorted(extras)}, expected {sorted(expected_extras)}")
    for extra, requirements in extras.items():
        names = set()
        for requirement in requirements:
            dep, _e, rest = parse_requirement(requirement)
            names.add(dep)
            problems.extend(_sibling_range_problems(f"{name}[{extra}]", dep, rest))
        if names != expected_extras.get(extra, set()):
            problems.append(
                f"{name}[{extra}] adds {sorted(names)}, expected {sorted(expected_extras.get(extra, set()))}"
            )
    return problems


def _sibling_range_problems(owner: str, dep: str, rest: str) -> list[str]:
    """A sibling is named by a compatible range: a lower and an upper bound, never a pin, a path or a URL."""
    if "@" in rest or "file:" in rest or "/" in rest:
        return [f"{owner} names {dep} by path or URL ({rest!r}); use a version range"]
    if "==" in rest or "===" in rest:
        return [f"{owner} pins {dep} ({rest!r}); use a compatible range such as >=0.1,<0.2"]
    if ">=" not in rest or "<" not in rest.replace("<=", ""):
        return [f"{owner} names {dep} without a compatible range ({rest!r})"]
    return []


def load(name: str) -> dict[str, Any]:
    return tomllib.loads((PACKAGES / name / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_distribution_is_known() -> None:
    found = {p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists()}
    assert found == set(ALLOWED)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_distribution_follows_the_dependency_rule(name: str) -> None:
    data = load(name)
    assert data["project"]["name"] == name
    assert dependency_problems(name, data["project"]) == []


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_distribution_layout(name: str) -> None:
    folder = PACKAGES / name
    package = folder / "src" / IMPORT_NAMES[name]
    for required in ("README.md", "CHANGELOG.md", "pyproject.toml"):
        assert (folder / required).is_file(), f"{name} lacks {required}"
    assert (package / "py.typed").is_file()
    assert (package / "__init__.py").is_file()
    assert any((folder / "tests").glob("**/test_*.py")), f"{name} has no tests"
    data = load(name)
    assert data["tool"]["hatch"]["version"]["path"] == f"src/{IMPORT_NAMES[name]}/_version.py"
    assert "Typing :: Typed" in data["project"]["classifiers"]


def test_core_keeps_the_yaml_c_extension() -> None:
    deps = [parse_requirement(r) for r in load("onellm-core")["project"]["dependencies"]]
    extras = {name: extra for name, extra, _ in deps}
    assert "libyaml" in extras["ruamel-yaml"]


def test_dev_tools_live_in_groups() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = {parse_requirement(r)[0] for r in root["dependency-groups"]["dev"]}
    assert {"pytest", "hypothesis", "opentelemetry-sdk", "ruff", "mypy"} <= dev
    assert root["project"]["dependencies"] == []


# The rule must catch what it is for. Each case below is a change someone could make by mistake.
def _core() -> dict[str, Any]:
    return dict(load("onellm-core")["project"])


@pytest.mark.parametrize(
    ("name", "change", "complaint"),
    [
        ("onellm-core", lambda p: p["dependencies"].append("requests>=2"), "may not depend on 'requests'"),
        ("onellm-core", lambda p: p["dependencies"].append("pytest>=8"), "dev tool"),
        ("onellm-web", lambda p: p["dependencies"].append("beautifulsoup4"), "may not depend on 'beautifulsoup4'"),
        ("onellm-js", lambda p: p["dependencies"].__setitem__(1, "quickjs>=1.19"), "may not depend on 'quickjs'"),
        ("onellm-sqlite", lambda p: p["dependencies"].append("sqlalchemy>=2"), "may not depend on 'sqlalchemy'"),
        ("onellm-cli", lambda p: p["dependencies"].__setitem__(0, "onellm-core==0.1.0"), "pins onellm-core"),
        ("onellm-cli", lambda p: p["dependencies"].__setitem__(0, "onellm-core @ file:///x"), "by path or URL"),
        ("onellm-cli", lambda p: p["dependencies"].__setitem__(0, "onellm-core"), "without a compatible range"),
        ("onellm-cli", lambda p: p["optional-dependencies"].pop("all"), "has extras"),
        ("onellm-cli", lambda p: p["optional-dependencies"]["web"].append("rich"), "adds"),
        ("onellm-web", lambda p: p["dependencies"].pop(), "lacks its dependencies"),
    ],
)
def test_the_rule_fails_when_a_dependency_is_added(name: str, change: Any, complaint: str) -> None:
    project = load(name)["project"]
    project = {
        **project,
        "dependencies": list(project["dependencies"]),
        "optional-dependencies": {k: list(v) for k, v in project.get("optional-dependencies", {}).items()},
    }
    assert dependency_problems(name, project) == []
    change(project)
    problems = dependency_problems(name, project)
    assert any(complaint in p for p in problems), problems
