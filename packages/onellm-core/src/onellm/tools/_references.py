"""The registered tools, and checking a definition's `references` against them and against the grants.

A definition names tools; it never grants anything. Each entry of `references` is a mapping with one of:

- `tools: [name, ...]` alone: registered tools by name;
- `routine: <source>` with optional `tools` (absent: all of the source's tools; an empty list: none) and `required`:
  a registered group (a tool file, a package's set), or a single tool found by the last path segment of the source
  (`/agent-tools/os/read-file` finds `read_file`);
- `swarm: <group>`: every tool of a registered group.

A tool is granted when the runtime's capabilities give every grant it needs (`Tool.required_grants`). A group counts as
granted only when every tool in it is. In strict mode (the default) an unknown or ungranted reference fails with
`BadDefinitionError` at the file, line and column of the entry, naming the tool and the grant or package to add. In
lenient mode the entry is dropped with a warning; for a group the warning says the source was left out, and the group's
tools that are granted are still taken one by one. An entry with `required: false` is dropped with a warning in either
mode.

The agent loop's own tools are always found: `task_complete` and the sub-agent tools (`run_agent_async`, `await_agent`,
`message_agent`, `monitor_agent`, `await_monitor`, `list_agent_instances`, `query_agent`). A registry that has no tool
of such a name registers the core one the first time a reference names it (a host may register its own under the name
instead).

Installed distributions offer tools through the `onellm.tools` entry-point group: the entry's name is the tool's name,
its object a `Tool` or a callable that takes no arguments and returns one. A registry looks a name up there when no
registered tool has it, and registers what it finds (onellm-web offers `fetch_webpage_markdown` this way). A reference
to a tool of an optional distribution that is not installed fails with an error that is both a `BadDefinitionError`
(with the position) and a `CapabilityMissingError` naming the distribution to install.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from onellm._describe import format_path
from onellm.errors import BadDefinitionError, CapabilityMissingError
from onellm.tools._tool import GRANT_KINDS, Tool

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities

__all__ = ["ENTRY_POINT_GROUP", "KNOWN_PACKAGES", "ResolvedReferences", "ToolReferenceResolver", "ToolRegistry"]

ENTRY_POINT_GROUP: Final = "onellm.tools"
"""The entry-point group where installed distributions offer tools by name."""

KNOWN_PACKAGES: Final[Mapping[str, str]] = {
    "fetch_webpage_markdown": "onellm-web",
    "run_javascript": "onellm-js",
}
"""Tools that come with an optional distribution: a reference to one that is not registered names the package."""

_GRANT_CHECKS: Final[Mapping[str, str]] = {
    "files_read": "has_file_read",
    "files_write": "has_file_write",
    "shell": "shell_enabled",
    "network": "network_enabled",
}

_GRANT_ADVICE: Final[Mapping[str, str]] = {
    "files_read": "a file grant: add Capabilities.files(...) or Capabilities.read_only_files(...)",
    "files_write": "a writable file grant: add Capabilities.files(...)",
    "shell": "a shell grant: add Capabilities.shell_commands(...), Capabilities.shell_with_approval(...) or "
    "Capabilities.shell()",
    "network": "a network grant: add Capabilities.network(...) or Capabilities.any_public_hosts()",
}

Position = Callable[[tuple[str | int, ...]], "tuple[int, int] | None"]


def _normalise(name: str) -> str:
    return name.strip().replace("-", "_")


class _PackageMissingError(BadDefinitionError, CapabilityMissingError):
    """A definition references a tool of an optional distribution that is not installed; `package` names it."""

    def __init__(self, message: str, *, package: str, **where: Any) -> None:
        self.package = package
        """The distribution to install, for example `onellm-web`."""
        super().__init__(message, **where)


def _core_tool(name: str) -> Tool[..., Any] | None:
    """A tool the agent loop itself provides under `name` (`task_complete` and the sub-agent tools), or None."""
    if name == "task_complete":
        from onellm.tools.builtin.agent import task_complete_tool

        return task_complete_tool()
    from onellm.tools.builtin.subagents import AGENT_TOOL_NAMES, subagent_tool

    return subagent_tool(name) if name in AGENT_TOOL_NAMES else None


def _entry_points(name: str) -> list[Any]:
    """The `onellm.tools` entry points named `name` among the installed distributions."""
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP, name=name))


def _installed_tool(name: str) -> Tool[..., Any] | None:
    """The tool an installed distribution offers as `name` in the `onellm.tools` entry-point group, or None.

    Raises:
        CapabilityMissingError: The entry exists but cannot be loaded, or does not give a tool.
    """
    for entry in _entry_points(name):
        dist = getattr(getattr(entry, "dist", None), "name", None) or "its distribution"
        try:
            loaded = entry.load()
            made = loaded if isinstance(loaded, Tool) else loaded()
        except Exception as exc:
            raise CapabilityMissingError(
                f"tool {name!r} of {dist} could not be loaded ({type(exc).__name__}: {exc}); reinstall {dist}"
            ) from exc
        if not isinstance(made, Tool) or made.name != name:
            raise CapabilityMissingError(
                f"the {ENTRY_POINT_GROUP} entry point {name!r} of {dist} does not give a tool named {name!r}"
            )
        return made
    return None


class ToolRegistry:
    """The tools a runtime can hand to agents, by name, and named groups of them (tool files, package sets).

    Args:
        tools: Tools (or plain functions) to register.
        installed: Look a name no registered tool has up among the installed distributions' `onellm.tools` entry
            points (`find`), and register the tool found.
    """

    def __init__(self, tools: Iterable[Tool[..., Any] | Callable[..., Any]] = (), *, installed: bool = True) -> None:
        self._tools: dict[str, Tool[..., Any]] = {}
        self._groups: dict[str, tuple[str, ...]] = {}
        self._derived: dict[Any, Any] = {}
        """What was worked out from the registered tools (an agent's checked setup), emptied whenever they change."""
        self.installed = installed
        """Whether `find` falls back to the installed distributions' tools."""
        self.add(*tools)

    def add(self, *tools: Tool[..., Any] | Callable[..., Any], replace: bool = False) -> None:
        """Register tools; a plain function is made a tool first. A second tool of the same name is refused unless
        `replace` is true."""
        for item in tools:
            t = item if isinstance(item, Tool) else Tool.create(item)
            if not replace and t.name in self._tools and self._tools[t.name] is not t:
                raise ValueError(f"a tool named {t.name!r} is already registered; pass replace=True to replace it")
            self._tools[t.name] = t
            self._derived.clear()

    def add_group(self, name: str, tools: Iterable[Tool[..., Any] | Callable[..., Any] | str]) -> None:
        """Register a named group (a source). Tools and functions are registered too (a name already taken by another
        tool is refused); names must already be registered."""
        members: list[str] = []
        for item in tools:
            if isinstance(item, str):
                if item not in self._tools:
                    raise ValueError(f"group {name!r}: no tool named {item!r} is registered")
                members.append(item)
                continue
            known = next((t for t in self._tools.values() if t is item or t.fn is item), None)
            t = known if known is not None else (item if isinstance(item, Tool) else Tool.create(item))
            self.add(t)
            members.append(t.name)
        self._groups[name] = tuple(dict.fromkeys(members))
        self._derived.clear()

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool named `name`, or None."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._tools)

    def group(self, name: str) -> tuple[str, ...] | None:
        """The tool names of a registered group, or None."""
        return self._groups.get(name)

    def find(self, reference: str) -> Tool[..., Any] | None:
        """A tool by its name, or by the last path segment of a source path (`-` read as `_`); then the agent loop's
        own tools (`task_complete`, the sub-agent tools); then, when `installed` is on, a tool an installed distribution offers under that name. A tool
        found in one of the last two ways is registered here.

        Raises:
            CapabilityMissingError: An installed distribution offers the name but its tool cannot be loaded.
        """
        direct = self._tools.get(reference) or self._tools.get(_normalise(reference))
        if direct is not None:
            return direct
        last = reference.rstrip("/").rsplit("/", 1)[-1]
        if last.endswith((".yaml", ".yml", ".js", ".json")):
            last = last.rsplit(".", 1)[0]
        found = self._tools.get(last) or self._tools.get(_normalise(last))
        if found is not None:
            return found
        name = _normalise(last)
        core = _core_tool(name)
        if core is not None:
            self.add(core)
            return core
        if not self.installed:
            return None
        made = _installed_tool(name) if name else None
        if made is not None:
            self.add(made)
        return made


class ResolvedReferences:
    """What a definition's references resolve to."""

    __slots__ = ("dropped", "tools", "warnings")

    def __init__(self, tools: list[Tool[..., Any]], warnings: list[str], dropped: list[int]) -> None:
        self.tools = tools
        """The tools the agent gets, in reference order, each once."""
        self.warnings = warnings
        """One message per dropped entry or left-out source (lenient mode, or `required: false`)."""
        self.dropped = dropped
        """Indexes of the entries dropped entirely."""

    @property
    def names(self) -> list[str]:
        """The names of the resolved tools."""
        return [t.name for t in self.tools]


def _as_mapping(reference: Any) -> Any:
    if isinstance(reference, Mapping):
        return reference
    to_data = getattr(reference, "to_data", None)
    if callable(to_data):
        return to_data()
    if any(hasattr(reference, k) for k in ("routine", "swarm", "tools")):
        out: dict[str, Any] = {}
        for key in ("routine", "swarm", "tools", "required"):
            value = getattr(reference, key, None)
            if value is not None:
                out[key] = value
        return out
    return reference


def _granted_by(capabilities: Any) -> Callable[[str], bool]:
    if capabilities is None:
        return lambda kind: False
    if callable(capabilities) and not hasattr(capabilities, "has_file_read"):
        return capabilities  # type: ignore[no-any-return]
    if isinstance(capabilities, Iterable) and not hasattr(capabilities, "has_file_read"):
        given = frozenset(capabilities)
        return lambda kind: kind in given

    def check(kind: str) -> bool:
        return bool(getattr(capabilities, _GRANT_CHECKS[kind], False))

    return check


class ToolReferenceResolver:
    """Checks a definition's `references` against the registered tools and the runtime's grants.

    Args:
        registry: The registered tools (a `ToolRegistry`, or tools to register in a new one).
        capabilities: The runtime's grants: a `Capabilities`, a set of grant kinds, or a predicate on a kind.
        strict: Fail on an unknown or ungranted reference (default); otherwise drop it with a warning.
        known_packages: Tool names that come with an optional distribution, for the error message.
    """

    def __init__(
        self,
        registry: ToolRegistry | Iterable[Tool[..., Any]],
        capabilities: Capabilities | Iterable[str] | Callable[[str], bool] | None,
        *,
        strict: bool = True,
        known_packages: Mapping[str, str] = KNOWN_PACKAGES,
    ) -> None:
        self.registry = registry if isinstance(registry, ToolRegistry) else ToolRegistry(registry)
        self.strict = strict
        self._granted = _granted_by(capabilities)
        self._packages = known_packages

    def missing_grants(self, t: Tool[..., Any]) -> list[str]:
        """The grant kinds `t` needs that the capabilities do not give."""
        return [kind for kind in t.required_grants if kind in GRANT_KINDS and not self._granted(kind)]

    def is_granted(self, t: Tool[..., Any]) -> bool:
        """Whether every grant `t` needs is given."""
        return not self.missing_grants(t)

    def resolve(
        self,
        references: Sequence[Any] | None,
        *,
        file: str | None = None,
        position: Position | None = None,
        path: tuple[str | int, ...] = ("references",),
    ) -> ResolvedReferences:
        """Resolve `references` (a list of mappings, as loaded from the definition).

        Args:
            references: The definition's `references` entries.
            file: The definition's file, for messages.
            position: `(path) -> (line, column)` of a node, for example `YamlDocument.position`; without it, positions
                are read from round-trip YAML nodes when they carry them.
            path: Where `references` sits in the document.

        Raises:
            BadDefinitionError: In strict mode, for an unknown or ungranted reference or a malformed entry.
        """
        run = _Run(self, references or [], file, position, path, strict=self.strict)
        return run.resolve()

    def check(self, reference: Any) -> str | None:
        """Why one reference cannot be used (unknown, or not granted), or None when it can.

        Takes a mapping as written in the definition, or an object with `routine`, `swarm`, `tools` and `required`
        attributes (or a `to_data()` method). This is the per-entry check a definition loader calls; it places the
        reason at the entry and applies its own strict or lenient rule. A reference with `required: false` is never
        refused here: it is dropped with a warning when the tools are resolved.
        """
        entry = _as_mapping(reference)
        run = _Run(self, [entry], None, None, ("references",), strict=True)
        try:
            run._entry(0, entry)
        except BadDefinitionError as exc:
            return exc.detail
        return None


class _Run:
    def __init__(
        self,
        resolver: ToolReferenceResolver,
        references: Sequence[Any],
        file: str | None,
        position: Position | None,
        base: tuple[str | int, ...],
        *,
        strict: bool,
    ) -> None:
        self.r = resolver
        self.strict = strict
        self.references = references
        self.file = file
        self.position = position
        self.base = base
        self.tools: dict[str, Tool[..., Any]] = {}
        self.warnings: list[str] = []
        self.dropped: list[int] = []

    # -- locating

    def _where(self, steps: tuple[str | int, ...]) -> tuple[int | None, int | None]:
        if self.position is not None:
            found = self.position(self.base + steps)
            if found is not None:
                return found
            return None, None
        return self._node_position(steps)

    def _node_position(self, steps: tuple[str | int, ...]) -> tuple[int | None, int | None]:
        node: Any = self.references
        found: tuple[int, int] | None = None
        for step in steps:
            lc = getattr(node, "lc", None)
            if lc is None:
                break
            try:
                line, column = lc.item(step) if isinstance(step, int) else lc.value(step)
            except (KeyError, IndexError, TypeError, AttributeError):
                break
            found = (line + 1, column + 1)
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                break
        return found if found is not None else (None, None)

    def _dotted(self, steps: tuple[str | int, ...]) -> str:
        return format_path(self.base + steps)

    def _refuse(
        self, index: int, steps: tuple[str | int, ...], message: str, *, optional: bool, package: str | None = None
    ) -> None:
        if self.strict and not optional:
            line, column = self._where(steps)
            where: dict[str, Any] = {"file": self.file, "line": line, "column": column, "path": self._dotted(steps)}
            if package is not None:
                raise _PackageMissingError(message, package=package, **where)
            raise BadDefinitionError(message, **where)
        self._warn(steps, message + "; the reference was dropped")
        if index not in self.dropped:
            self.dropped.append(index)

    def _warn(self, steps: tuple[str | int, ...], message: str) -> None:
        line, column = self._where(steps)
        where = self.file or "<definition>"
        if line is not None:
            where += f":{line}" + (f":{column}" if column is not None else "")
        self.warnings.append(f"{where}: {message}")

    # -- messages

    def _package(self, name: str) -> str | None:
        return self.r._packages.get(name) or self.r._packages.get(_normalise(name))

    def _unknown(self, name: str) -> str:
        package = self._package(name)
        if package is not None:
            return (
                f"tool {name!r} comes with the {package} package, which is not installed or not registered; "
                f"install it (pip install {package}) or register its tools"
            )
        return f"no tool named {name!r} is registered; register it with the runtime's tools (tools.add)"

    def _find(
        self, index: int, steps: tuple[str | int, ...], name: str, optional: bool
    ) -> tuple[Tool[..., Any] | None, bool]:
        """`registry.find`, and whether the entry was refused because an installed tool failed to load."""
        try:
            return self.r.registry.find(name), False
        except CapabilityMissingError as exc:
            self._refuse(index, steps, str(exc), optional=optional)
            return None, True

    def _ungranted(self, t: Tool[..., Any], missing: list[str]) -> str:
        needs = "; and ".join(_GRANT_ADVICE[kind] for kind in missing)
        return f"tool {t.name!r} needs {needs} (a definition cannot grant anything)"

    # -- resolving

    def resolve(self) -> ResolvedReferences:
        if not isinstance(self.references, Sequence) or isinstance(self.references, str | bytes):
            line, column = self._where(())
            raise BadDefinitionError(
                "references must be a list of mappings", file=self.file, line=line, column=column, path="references"
            )
        for index, entry in enumerate(self.references):
            self._entry(index, _as_mapping(entry))
        return ResolvedReferences(list(self.tools.values()), self.warnings, self.dropped)

    def _entry(self, index: int, entry: Any) -> None:
        if not isinstance(entry, Mapping):
            self._refuse(index, (index,), "a reference must be a mapping with routine, swarm or tools", optional=False)
            return
        required = entry.get("required", True)
        if not isinstance(required, bool):
            self._refuse(index, (index, "required"), "required must be true or false", optional=False)
            return
        optional = not required
        selection = entry.get("tools")
        if selection is not None and (
            not isinstance(selection, Sequence)
            or isinstance(selection, str | bytes)
            or not all(isinstance(n, str) for n in selection)
        ):
            self._refuse(index, (index, "tools"), "tools must be a list of tool names", optional=False)
            return
        routine, swarm = entry.get("routine"), entry.get("swarm")
        if routine is not None and swarm is not None:
            self._refuse(index, (index,), "a reference takes routine or swarm, not both", optional=False)
            return
        source_key = "routine" if routine is not None else "swarm" if swarm is not None else None
        source = routine if routine is not None else swarm
        if source_key is not None and not isinstance(source, str):
            self._refuse(index, (index, source_key), f"{source_key} must be a string", optional=False)
            return
        if source_key is None:
            if selection is None:
                self._refuse(index, (index,), "a reference needs routine, swarm or tools", optional=False)
                return
            self._named_tools(index, list(selection), optional)
            return
        assert isinstance(source, str)
        members = self.r.registry.group(source)
        single: Tool[..., Any] | None = None
        if members is None and source_key == "routine":
            single, refused = self._find(index, (index, source_key), source, optional)
            if refused:
                return
            if single is not None:
                members = (single.name,)
        if members is None:
            last = _normalise(source.rstrip("/").rsplit("/", 1)[-1])
            self._refuse(
                index,
                (index, source_key),
                self._unknown_source(source),
                optional=optional,
                package=self._package(last),
            )
            return
        if selection is not None:
            for i, name in enumerate(selection):
                if name not in members:
                    self._refuse(
                        index,
                        (index, "tools", i),
                        f"source {source!r} has no tool named {name!r} (it has: {', '.join(members) or 'none'})",
                        optional=optional,
                    )
                    continue
                self._take(index, (index, "tools", i), self.r.registry[name], optional)
            return
        if single is not None:
            self._take(index, (index, source_key), single, optional)
            return
        self._group(index, (index, source_key), source, members, optional)

    def _unknown_source(self, source: str) -> str:
        last = source.rstrip("/").rsplit("/", 1)[-1]
        if _normalise(last) in self.r._packages or last in self.r._packages:
            return self._unknown(_normalise(last))
        return f"no tool source named {source!r} is registered"

    def _named_tools(self, index: int, names: list[str], optional: bool) -> None:
        for i, name in enumerate(names):
            members = self.r.registry.group(name)
            if members is not None and self.r.registry.get(name) is None:
                self._group(index, (index, "tools", i), name, members, optional)
                continue
            t, refused = self._find(index, (index, "tools", i), name, optional)
            if t is None:
                if not refused:
                    self._refuse(
                        index, (index, "tools", i), self._unknown(name), optional=optional, package=self._package(name)
                    )
                continue
            self._take(index, (index, "tools", i), t, optional)

    def _take(self, index: int, steps: tuple[str | int, ...], t: Tool[..., Any], optional: bool) -> None:
        missing = self.r.missing_grants(t)
        if missing:
            self._refuse(index, steps, self._ungranted(t, missing), optional=optional)
            return
        self.tools.setdefault(t.name, t)

    def _group(
        self, index: int, steps: tuple[str | int, ...], source: str, members: tuple[str, ...], optional: bool
    ) -> None:
        tools = [self.r.registry[name] for name in members]
        ungranted = [(t, self.r.missing_grants(t)) for t in tools]
        ungranted = [(t, m) for t, m in ungranted if m]
        if not ungranted:
            for t in tools:
                self.tools.setdefault(t.name, t)
            return
        first, missing = ungranted[0]
        names = ", ".join(t.name for t, _ in ungranted)
        message = f"source {source!r} is not granted as a whole: {names} not granted; {self._ungranted(first, missing)}"
        if self.strict and not optional:
            line, column = self._where(steps)
            raise BadDefinitionError(message, file=self.file, line=line, column=column, path=self._dotted(steps))
        self._warn(steps, message + f"; the source {source!r} was left out and its granted tools taken one by one")
        for t in tools:
            if not self.r.missing_grants(t):
                self.tools.setdefault(t.name, t)
