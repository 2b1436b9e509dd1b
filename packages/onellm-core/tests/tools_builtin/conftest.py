from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


from collections.abc import Callable, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from onellm.capabilities import Capabilities  # noqa: E402
from onellm.tools import Tool, ToolContext, ToolResult  # noqa: E402
from onellm.tools.builtin import BuiltinOptions, builtin_tools  # noqa: E402


class Runner:
    """Calls built-in tools the way the runtime does: through `Tool.invoke` with a context."""

    def __init__(self, root: Path, options: BuiltinOptions | None = None) -> None:
        self.root = root
        self.options = options or BuiltinOptions()
        self.tools: dict[str, Tool[..., object]] = {t.name: t for t in builtin_tools(self.options)}

    async def __call__(
        self,
        name: str,
        arguments: Mapping[str, Any],
        caps: Capabilities | None = None,
        *,
        instance_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> ToolResult:
        ctx = ToolContext(
            capabilities=caps if caps is not None else Capabilities.files(self.root),
            working_directory=self.root,
            instance_id=instance_id,
            extra=extra,
        )
        return await self.tools[name].invoke(dict(arguments), ctx)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


@pytest.fixture
def run(root: Path) -> Runner:
    return Runner(root)


@pytest.fixture
def make_runner(root: Path) -> Callable[..., Runner]:
    def make(**options: Any) -> Runner:
        return Runner(root, BuiltinOptions(**options))

    return make
