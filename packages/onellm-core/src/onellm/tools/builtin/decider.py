"""`run_decider`: a model runs a decider and reads its answers (the `decider-writer` example agent checks the deciders
it writes this way).

The decider is read under the call's read grant: its path is resolved against the read roots, and so is every link in
its folder before anything is loaded, so a link cannot bring in a definition, schema or logic file from outside the
granted roots (`CapabilityDeniedError` naming the entry as the model wrote it). The definition and its schema are read
through the double-checked open. JavaScript logic (`decider.js`, `decider.ts`) runs in onellm-js's sandbox; Python
logic (`decider.py`) is refused, as it would run unsandboxed in the host. The run is an instance of its own, with
origin `agent` and the calling run as its `callerInstanceId`, so its cost counts in the caller's subtree (and not
twice in the tool's result).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from onellm.tools import Tool, ToolContext
from onellm.tools.builtin import _access
from onellm.tools.builtin._options import BuiltinOptions
from onellm.tools.builtin._text import describe

__all__ = ["decider_tools"]

_DEFINITION_NAMES = ("decider.yaml", "decider.yml")


def _check_links(ctx: ToolContext, given: str, folder: Path) -> None:
    """Resolve every link in the decider's folder against the read roots (each named as the model would write it)."""
    with _access.file_errors(given, "list"), os.scandir(folder) as entries:
        links = [entry.name for entry in entries if entry.is_symlink()]
    for name in sorted(links):
        ctx.capabilities.resolve_read(os.path.join(given, name), base=ctx.working_directory)


def _read(ctx: ToolContext, given: str, limit: int) -> bytes:
    return _access.read_bytes(ctx, given, limit)[1]


def _load(ctx: ToolContext, given: str, limit: int) -> Any:
    """The decider at `given` (a folder holding `decider.yaml`, or the file), read under the grant."""
    from onellm.definitions import Decider, decider_name, read_schema

    resolved = _access.resolve_read(ctx, given)
    with _access.file_errors(given, "read"):
        is_folder = resolved.is_dir()
    if is_folder:
        folder_given = given
        for candidate in _DEFINITION_NAMES:
            if (resolved / candidate).is_file() or (resolved / candidate).is_symlink():
                file_given = os.path.join(given, candidate)
                break
        else:
            raise FileNotFoundError(f"{given} holds no decider.yaml")
    else:
        file_given = given
        folder_given = os.path.dirname(given) or "."
    folder = _access.resolve_read(ctx, folder_given)
    _check_links(ctx, folder_given, folder)
    real = _access.resolve_read(ctx, file_given)
    text = _read(ctx, file_given, limit)
    decider = Decider.loads(text, file=file_given, name=decider_name(real))
    object.__setattr__(decider, "_path", real)
    stem = real.name[: -len(real.suffix)] if real.suffix else real.name
    schema_given = os.path.join(folder_given, stem + ".schema.json")
    schema = _access.resolve_read(ctx, schema_given)
    if schema.is_file():
        _read(ctx, schema_given, limit)  # through the double check: a regular file inside the roots
        decider.schema = read_schema(schema)
    return decider


def decider_tools(options: BuiltinOptions) -> list[Tool[..., object]]:
    """`run_decider`, bound to `options`."""

    async def run_decider(
        path: str, ctx: ToolContext, inputs: dict[str, Any] | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """Runs a decider and returns its answers: the questions of a decider.yaml asked about the state its inputs
        give, each answer with its probabilities.

        Returns JSON with `answers` (by question id), `outputs` (what the decider's logic made of them, when it has
        logic), `cost` (US dollars, or null when it could not be priced) and `instanceId` (the saved run).

        Args:
            path: The folder holding decider.yaml, or the decider file, relative to the working directory.
            inputs: The decider's inputs, by name, as its templates read them (`.inputs.title`).
            model: Ask this model instead of the decider's own.
        """
        import anyio.to_thread

        from onellm.deciders import find_logic, run_decision
        from onellm.runtime import Runtime, current_runtime

        decider = await anyio.to_thread.run_sync(_load, ctx, path, options.max_file_bytes)
        logic = await find_logic(decider, allow_python=False)
        runtime = ctx.runtime if isinstance(ctx.runtime, Runtime) else current_runtime()
        result = await run_decision(
            runtime.services,
            decider,
            inputs or {},
            origin="agent",
            model=model,
            logic=logic,
            caller_instance_id=ctx.instance_id,
            allow_python_logic=False,
        )
        out: dict[str, Any] = {"answers": result.answers}
        if logic is not None and logic.has_decide:
            out["outputs"] = result.outputs
        out["cost"] = result.cost.total if result.cost.priced else None
        out["instanceId"] = result.instance.id
        return out

    return [Tool.create(run_decider, description=describe(run_decider), required_grants=("files_read",))]
