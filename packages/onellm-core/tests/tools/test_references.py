"""A definition's `references` against the registered tools and the grants: strict fails with a position, lenient drops
with a warning, a group counts as granted only when every tool in it is."""

import re
from pathlib import Path
from typing import Any

import pytest

from onellm import BadDefinitionError, CapabilityMissingError
from onellm.capabilities import Capabilities
from onellm.tools import Tool, ToolReferenceResolver, ToolRegistry, _references, tool
from onellm.yamlio import load_document


def make(name: str, *grants: str) -> Tool[..., Any]:
    def fn() -> None:
        return None

    return Tool.create(fn, name=name, description=name, required_grants=grants)


@tool
def get_docket(case_no: str) -> str:
    """Looks up a docket."""
    return case_no


def registry() -> ToolRegistry:
    reg = ToolRegistry([get_docket])
    reg.add(
        make("read_file", "files_read"),
        make("write_file", "files_read", "files_write"),
        make("execute_terminal_command", "shell"),
        make("http_request", "network"),
        make("ask_user"),
    )
    reg.add_group("builtin:files", ["read_file", "write_file"])
    reg.add_group("os-tools", ["read_file", "execute_terminal_command"])
    return reg


def read_only(tmp_path: Path) -> Capabilities:
    return Capabilities.read_only_files(tmp_path)


def resolve(text: str, caps: Any, *, strict: bool = True) -> Any:
    doc = load_document(text, file="agents/clerk.yaml")
    resolver = ToolReferenceResolver(registry(), caps, strict=strict)
    return resolver.resolve(doc.data["references"], file="agents/clerk.yaml", position=doc.position)


def test_named_tools_resolve_in_order(tmp_path: Path) -> None:
    out = resolve("references:\n  - tools: [get_docket, read_file, ask_user, get_docket]\n", read_only(tmp_path))
    assert out.names == ["get_docket", "read_file", "ask_user"]
    assert out.warnings == []


def test_strict_unknown_tool_names_file_line_column(tmp_path: Path) -> None:
    text = "name: clerk\nreferences:\n  - tools:\n      - get_docket\n      - get_dockets\n"
    with pytest.raises(BadDefinitionError) as info:
        resolve(text, read_only(tmp_path))
    err = info.value
    assert (err.file, err.line, err.column, err.path) == ("agents/clerk.yaml", 5, 9, "references[0].tools[1]")
    assert "no tool named 'get_dockets' is registered" in str(err)
    assert str(err).startswith("agents/clerk.yaml:5:9: ")


def test_strict_ungranted_tool_names_the_grant_to_add(tmp_path: Path) -> None:
    text = "references:\n  - tools: [read_file, execute_terminal_command]\n"
    with pytest.raises(BadDefinitionError) as info:
        resolve(text, read_only(tmp_path))
    message = str(info.value)
    assert (info.value.line, info.value.column) == (2, 24)
    assert "tool 'execute_terminal_command' needs a shell grant" in message
    assert "Capabilities.shell_commands(...)" in message


@pytest.mark.parametrize(
    ("tool_name", "advice"),
    [
        ("write_file", "a writable file grant: add Capabilities.files(...)"),
        ("http_request", "a network grant: add Capabilities.network(...) or Capabilities.any_public_hosts()"),
    ],
)
def test_each_grant_kind_is_named(tmp_path: Path, tool_name: str, advice: str) -> None:
    with pytest.raises(BadDefinitionError, match=re.escape(advice)):
        resolve(f"references:\n  - tools: [{tool_name}]\n", read_only(tmp_path))


class FakeEntryPoint:
    """Stands for an installed distribution's `onellm.tools` entry point."""

    def __init__(self, name: str, load: Any, dist: str = "onellm-web") -> None:
        self.name = name
        self._load = load
        self.dist = type("Dist", (), {"name": dist})()

    def load(self) -> Any:
        return self._load()


def installed(monkeypatch: pytest.MonkeyPatch, *entries: FakeEntryPoint) -> list[str]:
    """Replace the installed distributions' entry points; returns the names looked up."""
    asked: list[str] = []

    def lookup(name: str) -> list[Any]:
        asked.append(name)
        return [e for e in entries if e.name == name]

    monkeypatch.setattr(_references, "_entry_points", lookup)
    return asked


def test_a_tool_of_an_optional_package_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch)
    with pytest.raises(BadDefinitionError, match="comes with the onellm-web package") as info:
        resolve("references:\n  - tools: [fetch_webpage_markdown]\n", Capabilities.any_public_hosts())
    assert isinstance(info.value, CapabilityMissingError)
    assert getattr(info.value, "package", None) == "onellm-web"
    assert (info.value.line, info.value.column) == (2, 13)
    assert "pip install onellm-web" in str(info.value)
    with pytest.raises(CapabilityMissingError, match="onellm-web"):
        resolve("references:\n  - routine: /agent-tools/web/fetch-webpage-markdown\n", Capabilities.any_public_hosts())


def test_an_installed_distribution_offers_its_tool_by_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    offered = make("fetch_webpage_markdown", "network")
    asked = installed(monkeypatch, FakeEntryPoint("fetch_webpage_markdown", lambda: lambda: offered))
    reg = registry()
    resolver = ToolReferenceResolver(reg, Capabilities.network("a.example"))
    assert resolver.resolve([{"tools": ["fetch_webpage_markdown"]}]).tools == [offered]
    assert reg.get("fetch_webpage_markdown") is offered, "the tool found is registered"
    assert resolver.resolve([{"routine": "/agent-tools/web/fetch-webpage-markdown"}]).tools == [offered]
    assert asked == ["fetch_webpage_markdown"], "a registered tool is not looked up again"
    with pytest.raises(BadDefinitionError, match="needs a network grant"):
        ToolReferenceResolver(registry(), Capabilities.default()).resolve([{"tools": ["fetch_webpage_markdown"]}])


def test_an_entry_point_may_name_the_tool_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    offered = make("lookup_docket")
    installed(monkeypatch, FakeEntryPoint("lookup_docket", lambda: offered, dist="acme-tools"))
    assert ToolRegistry().find("lookup-docket") is offered


def test_discovery_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = installed(monkeypatch, FakeEntryPoint("fetch_webpage_markdown", lambda: make("fetch_webpage_markdown")))
    reg = ToolRegistry(installed=False)
    assert reg.find("fetch_webpage_markdown") is None
    with pytest.raises(CapabilityMissingError, match="comes with the onellm-web package"):
        ToolReferenceResolver(reg, {"network"}).resolve([{"tools": ["fetch_webpage_markdown"]}])
    assert asked == []


def _broken() -> Any:
    raise ImportError("No module named 'markdownify'")


@pytest.mark.parametrize(
    ("load", "message"),
    [
        (_broken, "tool 'fetch_webpage_markdown' of onellm-web could not be loaded (ImportError: No module named "),
        (lambda: lambda: "not a tool", "entry point 'fetch_webpage_markdown' of onellm-web does not give a tool"),
        (lambda: make("other_name"), "entry point 'fetch_webpage_markdown' of onellm-web does not give a tool"),
    ],
)
def test_an_entry_point_that_fails_is_refused_at_the_entry(
    monkeypatch: pytest.MonkeyPatch, load: Any, message: str
) -> None:
    installed(monkeypatch, FakeEntryPoint("fetch_webpage_markdown", load))
    with pytest.raises(BadDefinitionError, match=re.escape(message)) as info:
        resolve("references:\n  - tools: [ask_user, fetch_webpage_markdown]\n", {"network"})
    assert (info.value.line, info.value.column) == (2, 23)
    out = resolve("references:\n  - tools: [ask_user, fetch_webpage_markdown]\n", {"network"}, strict=False)
    assert out.names == ["ask_user"]
    assert message in out.warnings[0]


def test_no_capabilities_grants_nothing() -> None:
    resolver = ToolReferenceResolver(registry(), None)
    with pytest.raises(BadDefinitionError, match="needs a file grant"):
        resolver.resolve([{"tools": ["read_file"]}])
    assert resolver.resolve([{"tools": ["ask_user", "get_docket"]}]).names == ["ask_user", "get_docket"]


def test_lenient_drops_with_a_positioned_warning(tmp_path: Path) -> None:
    text = "references:\n  - tools: [read_file, execute_terminal_command, nope]\n  - tools: [ask_user]\n"
    out = resolve(text, read_only(tmp_path), strict=False)
    assert out.names == ["read_file", "ask_user"]
    assert len(out.warnings) == 2
    assert out.warnings[0].startswith("agents/clerk.yaml:2:24: tool 'execute_terminal_command' needs a shell grant")
    assert out.warnings[0].endswith("the reference was dropped")
    assert out.warnings[1].startswith("agents/clerk.yaml:2:50: no tool named 'nope'")


def test_group_granted_only_when_every_tool_is(tmp_path: Path) -> None:
    granted = resolve("references:\n  - routine: builtin:files\n", Capabilities.files(tmp_path))
    assert granted.names == ["read_file", "write_file"]
    with pytest.raises(BadDefinitionError) as info:
        resolve("references:\n  - routine: builtin:files\n", read_only(tmp_path))
    assert "source 'builtin:files' is not granted as a whole: write_file not granted" in str(info.value)
    assert (info.value.line, info.value.column) == (2, 14)


def test_lenient_group_leaves_the_source_out_but_keeps_granted_tools(tmp_path: Path) -> None:
    out = resolve("references:\n  - swarm: os-tools\n", read_only(tmp_path), strict=False)
    assert out.names == ["read_file"]
    assert len(out.warnings) == 1
    assert "the source 'os-tools' was left out and its granted tools taken one by one" in out.warnings[0]


def test_routine_selection_checks_only_the_selected_tools(tmp_path: Path) -> None:
    out = resolve("references:\n  - routine: os-tools\n    tools: [read_file]\n", read_only(tmp_path))
    assert out.names == ["read_file"]
    assert resolve("references:\n  - routine: os-tools\n    tools: []\n", read_only(tmp_path)).names == []
    with pytest.raises(BadDefinitionError, match="source 'os-tools' has no tool named 'write_file'"):
        resolve("references:\n  - routine: os-tools\n    tools: [write_file]\n", Capabilities.files(tmp_path))


def test_routine_path_finds_a_tool_by_its_last_segment(tmp_path: Path) -> None:
    out = resolve(
        "references:\n  - routine: /agent-tools/os/read-file\n  - routine: /runtime/tools/get_docket\n",
        read_only(tmp_path),
    )
    assert out.names == ["read_file", "get_docket"]


def test_unknown_routine(tmp_path: Path) -> None:
    with pytest.raises(BadDefinitionError, match=r"no tool source named 'tools/missing\.js' is registered"):
        resolve("references:\n  - routine: tools/missing.js\n", read_only(tmp_path))


def test_not_required_reference_is_dropped_even_in_strict_mode(tmp_path: Path) -> None:
    out = resolve(
        "references:\n  - routine: tools/missing.js\n    required: false\n  - tools: [ask_user]\n", read_only(tmp_path)
    )
    assert out.names == ["ask_user"]
    assert out.dropped == [0]
    assert "no tool source named 'tools/missing.js'" in out.warnings[0]


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        ("references:\n  - just-a-string\n", "a reference must be a mapping", (2, 5)),
        ("references:\n  - note: nothing\n", "a reference needs routine, swarm or tools", (2, 5)),
        ("references:\n  - tools: read_file\n", "tools must be a list of tool names", (2, 12)),
        ("references:\n  - routine: a\n    swarm: b\n", "routine or swarm, not both", (2, 5)),
        ("references:\n  - routine: [a]\n", "routine must be a string", (2, 14)),
        ("references:\n  - tools: [ask_user]\n    required: maybe\n", "required must be true or false", (3, 15)),
    ],
)
def test_malformed_entries(tmp_path: Path, text: str, message: str, where: tuple[int, int]) -> None:
    with pytest.raises(BadDefinitionError, match=message) as info:
        resolve(text, read_only(tmp_path))
    assert (info.value.line, info.value.column) == where


def test_positions_read_from_round_trip_nodes_without_a_position_function(tmp_path: Path) -> None:
    doc = load_document("references:\n  - tools: [ask_user, nope]\n", file="a.yaml")
    resolver = ToolReferenceResolver(registry(), read_only(tmp_path))
    with pytest.raises(BadDefinitionError) as info:
        resolver.resolve(doc.data["references"], file="a.yaml")
    assert (info.value.line, info.value.column) == (2, 23)


def test_plain_data_and_grant_sets() -> None:
    resolver = ToolReferenceResolver(registry(), {"shell"})
    assert resolver.resolve([{"tools": ["execute_terminal_command"]}]).names == ["execute_terminal_command"]
    with pytest.raises(BadDefinitionError) as info:
        resolver.resolve([{"tools": ["http_request"]}], file="x.yaml")
    assert (info.value.file, info.value.line, info.value.path) == ("x.yaml", None, "references[0].tools[0]")


def test_capability_kinds_follow_the_grants(tmp_path: Path) -> None:
    caps = Capabilities.read_only_files(tmp_path) + Capabilities.shell_commands("ls") + Capabilities.network("a.com")
    resolver = ToolReferenceResolver(registry(), caps)
    assert resolver.resolve([{"tools": ["read_file", "execute_terminal_command", "http_request"]}]).names == [
        "read_file",
        "execute_terminal_command",
        "http_request",
    ]
    assert resolver.missing_grants(registry()["write_file"]) == ["files_write"]


def test_registry_refuses_duplicate_names() -> None:
    reg = ToolRegistry([get_docket])
    with pytest.raises(ValueError, match="already registered"):
        reg.add(make("get_docket"))
    reg.add(make("get_docket"), replace=True)
    assert reg["get_docket"] is not get_docket
    with pytest.raises(ValueError, match="no tool named 'x'"):
        reg.add_group("g", ["x"])


def test_check_gives_the_reason_for_one_reference(tmp_path: Path) -> None:
    resolver = ToolReferenceResolver(registry(), read_only(tmp_path), strict=False)
    assert resolver.check({"tools": ["read_file"]}) is None
    reason = resolver.check({"routine": "builtin:files"})
    assert reason is not None
    assert "write_file not granted" in reason
    assert "a writable file grant" in reason
    assert resolver.check({"routine": "missing", "required": False}) is None


def test_reference_objects_are_read_like_mappings(tmp_path: Path) -> None:
    class Ref:
        def __init__(self, routine: str, tools: list[str] | None = None) -> None:
            self.routine = routine
            self.swarm = None
            self.tools = tools
            self.required = None

    class WithData:
        def to_data(self) -> dict[str, Any]:
            return {"swarm": "os-tools"}

    resolver = ToolReferenceResolver(registry(), read_only(tmp_path) + Capabilities.shell())
    assert resolver.check(Ref("os-tools", ["read_file"])) is None
    assert resolver.resolve([Ref("/x/get-docket"), WithData()]).names == [
        "get_docket",
        "read_file",
        "execute_terminal_command",
    ]
    assert "needs a network grant" in (resolver.check(Ref("/x/http-request")) or "")


def test_definition_loading_uses_the_resolver_check(tmp_path: Path) -> None:
    from onellm.definitions import Definition

    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: clerk\nreferences:\n  - routine: /agent-tools/os/read-file\n"
        "  - routine: /agent-tools/os/execute-terminal-command\n",
        encoding="utf-8",
    )
    resolver = ToolReferenceResolver(registry(), read_only(tmp_path))
    with pytest.raises(BadDefinitionError) as info:
        Definition.load(agent, check_reference=resolver.check)
    assert (info.value.line, info.value.column) == (4, 5)
    assert "tool 'execute_terminal_command' needs a shell grant" in str(info.value)
    lenient = Definition.load(agent, strict=False, check_reference=resolver.check)
    assert resolver.resolve([ref.to_data() for ref in lenient.references or []]).names == ["read_file"]


def test_a_tools_only_entry_is_named_by_its_tools(tmp_path: Path) -> None:
    from onellm.definitions import Definition

    text = "name: clerk\nreferences:\n  - tools: [get_docket, fetch_webpage_markdown]\n"
    resolver = ToolReferenceResolver(ToolRegistry(), read_only(tmp_path))
    with pytest.raises(BadDefinitionError) as info:
        Definition.loads(text, file="clerk.yaml", check_reference=resolver.check)
    assert str(info.value) == (
        "clerk.yaml:3:5: the reference to tools 'get_docket', 'fetch_webpage_markdown' is not granted: no tool named "
        "'get_docket' is registered; register it with the runtime's tools (tools.add) (at references[0])"
    )
    lenient = Definition.loads(text, file="clerk.yaml", strict=False, check_reference=resolver.check)
    assert [w.message for w in lenient.warnings] == [
        "the reference to tools 'get_docket', 'fetch_webpage_markdown' is not granted: no tool named 'get_docket' is "
        "registered; register it with the runtime's tools (tools.add)"
    ]


def test_groups_register_their_tools_without_replacing_others() -> None:
    def helper() -> None:
        """H."""

    reg = ToolRegistry()
    reg.add_group("pack", [get_docket, helper])
    assert reg.group("pack") == ("get_docket", "helper")
    reg.add_group("again", [helper, "get_docket"])
    assert reg.group("again") == ("helper", "get_docket")
    with pytest.raises(ValueError, match="already registered"):
        reg.add_group("clash", [make("helper")])
