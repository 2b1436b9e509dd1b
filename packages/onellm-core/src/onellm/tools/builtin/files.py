"""The file tools: `read_file`, `list_files`, `search_files_regex`, `write_file`, `replace_string`, `apply_patch`.

Each one resolves every path through the call's grants before touching it (`onellm.tools.builtin._access`), and each
has a size limit the model cannot raise (`BuiltinOptions`). Failures are raised as typed errors; the invoker turns them
into error results (`Tool 'write_file' failed: CapabilityDeniedError: ...`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec

from onellm._go.regexp import LineSearch, RegexBudgetError
from onellm.errors import CapabilityDeniedError
from onellm.tools import Tool, ToolContext
from onellm.tools.builtin import _access
from onellm.tools.builtin._glob import GlobError, PathFilter
from onellm.tools.builtin._options import BuiltinOptions
from onellm.tools.builtin._patch import FilePatch, PatchError, apply_file_patch, parse_patch
from onellm.tools.builtin._text import (
    BinaryFileError,
    decode_text,
    describe,
    encode_text,
    line_range,
    replace_in_text,
    split_lines,
)
from onellm.tools.builtin._walk import walk

if TYPE_CHECKING:
    from onellm.capabilities import DirectoryHandle

__all__ = ["file_tools"]

_MAX_LINE_SHOWN = 400

_LineNumber = Annotated[int, msgspec.Meta(ge=1)]
_Positive = _LineNumber


def _is_url(path: str) -> bool:
    head = path[:8].lower()
    return head.startswith(("http://", "https://"))


def _filters(options: BuiltinOptions, include: list[str] | None, exclude: list[str] | None) -> PathFilter:
    for name, globs in (("inclusionPatterns", include), ("exclusionPatterns", exclude)):
        if globs is not None and len(globs) > options.max_patterns:
            raise ValueError(f"{name} holds {len(globs)} patterns; at most {options.max_patterns}")
    try:
        return PathFilter(include or (), exclude or ())
    except GlobError as exc:
        raise ValueError(str(exc)) from None


def _cut_at_line(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, ending after a line break when there is one in reach."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut + 1] if cut >= 0 else text[:limit]


def _count_lines(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def file_tools(options: BuiltinOptions) -> list[Tool[..., object]]:
    """The six file tools, bound to `options`."""

    async def read_file(
        path: str, ctx: ToolContext, start_line: _LineNumber | None = None, end_line: _LineNumber | None = None
    ) -> str:
        """Reads a text file under the granted roots, or fetches a URL when the network grant allows its host.

        Returns the text as it is in the file (no line numbers). Long files are cut at a line boundary with a note
        that says which start_line to ask for next.

        Args:
            path: The file, relative to the working directory or absolute; or an http(s) URL.
            start_line: First line to return, 1-based.
            end_line: Last line to return, inclusive.
        """
        if start_line is not None and start_line < 1:
            raise ValueError("start_line must be 1 or more")
        if end_line is not None and end_line < 1:
            raise ValueError("end_line must be 1 or more")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ValueError(f"end_line ({end_line}) is before start_line ({start_line})")
        if _is_url(path):
            from onellm.tools.builtin.web import fetch_text

            text = await fetch_text(ctx, options, path)
            label = path
        else:
            import anyio.to_thread

            resolved, data = await anyio.to_thread.run_sync(_access.read_bytes, ctx, path, options.max_file_bytes)
            text = decode_text(data, path).text
            label = _access.display_path(ctx, resolved, path)
        if not text:
            return f"({label} is empty)"
        if start_line is None and end_line is None and len(text) <= options.read_limit_chars:
            return text
        body, first, last, total = line_range(text, start_line, end_line)
        if first > total:
            raise ValueError(f"start_line {first} is past the end of {label}, which has {total} lines")
        shown = _cut_at_line(body, options.read_limit_chars)
        if len(shown) < len(body):
            upto = first + _count_lines(shown) - 1
            if not shown.endswith("\n"):
                # One line longer than the limit: it is cut, and the next call starts after it.
                return (
                    f"{shown}\n[{label}: line {upto} of {total} is cut after {len(shown)} characters; "
                    f"read on with start_line={upto + 1}]"
                )
            return f"{shown}\n[{label}: showing lines {first}-{upto} of {total}; read on with start_line={upto + 1}]"
        if first != 1 or last != total:
            return f"{shown}\n[{label}: lines {first}-{last} of {total}]"
        return shown

    def list_files(
        ctx: ToolContext,
        path: str = ".",
        recursive: bool = False,
        inclusionPatterns: list[str] | None = None,  # the property name the definitions use
        exclusionPatterns: list[str] | None = None,
    ) -> str:
        """Lists a directory under the granted roots: one entry per line, directories ending in '/'.

        Symbolic links are shown as 'name (symlink)' and not followed. `.gitignore` files are honoured and `.git` is
        left out.

        Args:
            path: The directory, relative to the working directory or absolute.
            recursive: List everything below the directory, not just its entries.
            inclusionPatterns: Globs a file must match to be listed (for example '*.py' or 'src/**/*.ts').
            exclusionPatterns: Globs of files and directories to leave out (for example 'node_modules').
        """
        filters = _filters(options, inclusionPatterns, exclusionPatterns)
        start = _access.resolve_read(ctx, path)
        kind = _access.describe_start(ctx, path, start, "list")
        if kind == "file":
            raise NotADirectoryError(f"{path} is a file, not a directory; use read_file to read it")
        if kind == "missing":
            raise FileNotFoundError(f"{path} does not exist")
        lines: list[str] = []
        limit = options.list_limit_entries
        stopped = False
        for seen, entry in enumerate(walk(ctx.capabilities, start, recursive=recursive, filters=filters)):
            if seen % 256 == 0:
                ctx.check_cancelled()
            if entry.kind == "dir":
                if filters.include:
                    continue  # with inclusion globs only matching files are listed
                line = entry.rel + "/"
            elif entry.kind == "symlink":
                if not filters.included(entry.rel):
                    continue
                line = f"{entry.rel} (symlink)"
            else:
                if not filters.included(entry.rel):
                    continue
                line = entry.rel
            if len(lines) >= limit:
                stopped = True
                break
            lines.append(line)
        if stopped:
            lines.append(f"[listing stopped at {limit} entries; narrow the path or the patterns]")
        if not lines:
            return "(no entries)" if not filters.include and not filters.exclude else "(no entries match)"
        return "\n".join(lines)

    def search_files_regex(
        pattern: str,
        ctx: ToolContext,
        path: str = ".",
        inclusionPatterns: list[str] | None = None,
        exclusionPatterns: list[str] | None = None,
        case_sensitive: bool = True,
        max_results: _Positive = 100,
    ) -> str:
        """Searches text files under the granted roots for lines matching a regular expression.

        The engine runs in linear time: back-references and look-around are not supported. Each match is printed as
        'path:line: text'. `.gitignore` files are honoured, binary files skipped.

        Args:
            pattern: The regular expression (RE2 syntax, as in Go and ripgrep: no back-references or look-around).
            path: A directory to search recursively, or one file.
            inclusionPatterns: Globs a file must match to be searched (for example '*.py').
            exclusionPatterns: Globs of files and directories to skip.
            case_sensitive: Match letter case exactly.
            max_results: Most matching lines to return.
        """
        if max_results < 1:
            raise ValueError("max_results must be 1 or more")
        max_results = min(max_results, options.search_max_results)
        rx = LineSearch(pattern, ignore_case=not case_sensitive, budget=options.search_max_regex_steps)
        filters = _filters(options, inclusionPatterns, exclusionPatterns)
        caps = ctx.capabilities
        start = _access.resolve_read(ctx, path)
        candidates: Iterator[tuple[str, Path, DirectoryHandle | None]]
        kind = _access.describe_start(ctx, path, start, "search")
        if kind == "dir":
            candidates = (
                (e.rel, e.path, e.directory if e.kind == "file" else None)
                for e in walk(caps, start, recursive=True, filters=filters)
                if e.kind in ("file", "symlink") and filters.included(e.rel)
            )
        elif kind == "file":
            candidates = iter([(_access.display_path(ctx, start, path), start, None)])
        else:
            raise FileNotFoundError(f"{path} does not exist")
        results: list[str] = []
        files_searched = files_matched = skipped_large = skipped_binary = 0
        budget = options.search_max_total_bytes
        stopped = ""
        for count, (rel, file_path, directory) in enumerate(candidates):
            if count % 64 == 0:
                ctx.check_cancelled()
            try:
                # A file the walk found opens relative to its checked directory, never through a link; a link (or the
                # one file asked for) goes through open_read, which makes the whole check and the double check.
                if directory is not None:
                    opened = directory.open_file(file_path.name)
                elif kind == "file":
                    opened = caps.open_read(path, base=ctx.working_directory)  # the one file asked for, as given
                else:
                    opened = caps.open_read(str(file_path))
                with opened as fh:
                    size = os.fstat(fh.fileno()).st_size
                    if size > options.search_max_file_bytes:
                        skipped_large += 1
                        continue
                    if size > budget:
                        stopped = f"stopped after reading {options.search_max_total_bytes} bytes"
                        break
                    data: bytes = fh.read(options.search_max_file_bytes + 1)
            except (CapabilityDeniedError, OSError):
                continue
            budget -= len(data)
            try:
                text = decode_text(data, rel).text
            except BinaryFileError:
                skipped_binary += 1
                continue
            files_searched += 1
            if rx.required and rx.required not in text:
                continue
            hit = False
            for number, line in enumerate(split_lines(text), start=1):
                try:
                    found = rx.search(line)
                except RegexBudgetError as exc:
                    stopped = f"stopped in {rel} at line {number}: {exc}"
                    break
                if found:
                    hit = True
                    shown = line if len(line) <= _MAX_LINE_SHOWN else line[:_MAX_LINE_SHOWN] + " [...]"
                    results.append(f"{rel}:{number}: {shown}")
                    if len(results) >= max_results:
                        stopped = f"stopped at {max_results} matches"
                        break
            files_matched += hit
            if stopped:
                break
        summary = f"{len(results)} matching lines in {files_matched} files ({files_searched} files searched"
        if skipped_large:
            summary += f", {skipped_large} larger than {options.search_max_file_bytes} bytes skipped"
        if skipped_binary:
            summary += f", {skipped_binary} binary skipped"
        summary += ")"
        if stopped:
            summary += f"; {stopped}"
        return "\n".join([summary, *results])

    def write_file(path: str, content: str, ctx: ToolContext) -> str:
        """Creates or overwrites a text file under the granted write roots; missing directories are created.

        Args:
            path: The file, relative to the working directory or absolute.
            content: The whole new content of the file.
        """
        data = encode_text(content)
        if len(data) > options.max_file_bytes:
            raise ValueError(f"content is {len(data)} bytes, above the limit of {options.max_file_bytes} bytes")
        resolved, created = _access.write_bytes(ctx, path, data)
        verb = "Created" if created else "Overwrote"
        return f"{verb} {_access.display_path(ctx, resolved, path)} ({len(data)} bytes)."

    def replace_string(path: str, old_string: str, new_string: str, ctx: ToolContext, replace_all: bool = False) -> str:
        """Replaces text in a file: old_string must occur exactly once, unless replace_all is true.

        Copy old_string from the file exactly, with its indentation; include enough lines around the change to make it
        unique. The file's line endings and byte-order mark are kept.

        Args:
            path: The file, relative to the working directory or absolute.
            old_string: The exact text to replace.
            new_string: The text to put in its place.
            replace_all: Replace every occurrence instead of requiring exactly one.
        """
        _access.resolve_write(ctx, path)  # refuse before reading when the file cannot be written
        resolved, data = _access.read_bytes(ctx, path, options.max_file_bytes)
        decoded = decode_text(data, path)
        label = _access.display_path(ctx, resolved, path)
        text, count = replace_in_text(decoded.text, old_string, new_string, replace_all=replace_all, name=label)
        out = encode_text(text, bom=decoded.bom)
        if len(out) > options.max_file_bytes:
            raise ValueError(f"the result would be {len(out)} bytes, above the limit of {options.max_file_bytes}")
        _access.write_bytes(ctx, path, out)
        return f"Replaced {count} occurrence{'s' if count != 1 else ''} in {label}."

    def apply_patch(patch: str, ctx: ToolContext, dry_run: bool = False) -> str:
        """Applies a unified diff (as 'diff -u' or 'git diff' print it) to files under the granted write roots.

        Line numbers are hints: each hunk applies where its context and removed lines match exactly, nearest the
        stated line. Every file is checked before any is written; if one hunk fails, nothing is written. '--- /dev/null'
        creates a file, '+++ /dev/null' deletes one; renames are not supported.

        Args:
            patch: The unified diff text.
            dry_run: Check that the patch applies, without writing anything.
        """
        if len(patch) > options.max_patch_chars:
            raise ValueError(f"patch is {len(patch)} characters, above the limit of {options.max_patch_chars}")
        try:
            file_patches = parse_patch(patch)
        except PatchError as exc:
            raise ValueError(str(exc)) from None
        plan = _plan_patch(ctx, options, file_patches)
        report = [f"{'Would apply' if dry_run else 'Applied'} the patch to {len(plan)} files:"]
        report.extend(f"{step.action} {step.label} ({step.detail})" for step in plan)
        if dry_run:
            return "\n".join(report)
        for step in plan:
            if step.new_text is None:
                _access.delete_file(ctx, step.path)
            else:
                _access.write_bytes(ctx, step.path, encode_text(step.new_text, bom=step.bom))
        return "\n".join(report)

    return [
        Tool.create(read_file, description=describe(read_file), required_grants=("files_read",)),
        Tool.create(list_files, description=describe(list_files), required_grants=("files_read",)),
        Tool.create(search_files_regex, description=describe(search_files_regex), required_grants=("files_read",)),
        Tool.create(
            write_file,
            description=describe(write_file),
            required_grants=("files_read", "files_write"),
            parallel_safe=False,
        ),
        Tool.create(
            replace_string,
            description=describe(replace_string),
            required_grants=("files_read", "files_write"),
            parallel_safe=False,
        ),
        Tool.create(
            apply_patch,
            description=describe(apply_patch),
            required_grants=("files_read", "files_write"),
            parallel_safe=False,
        ),
    ]


@dataclass(slots=True)
class _Step:
    path: str
    label: str
    action: str
    detail: str
    new_text: str | None
    bom: bool


def _plan_patch(ctx: ToolContext, options: BuiltinOptions, file_patches: list[FilePatch]) -> list[_Step]:
    """Check every target and compute every new text in memory; raise before anything is written."""
    steps: dict[Path, _Step] = {}
    current: dict[Path, str | None] = {}
    hunk_counts: dict[Path, int] = {}
    for fp in file_patches:
        name = fp.path
        resolved = _access.resolve_write(ctx, name)
        _access.resolve_read(ctx, name)
        if resolved in current:
            before = current[resolved]
            bom = steps[resolved].bom
        elif _access.describe_start(ctx, name, resolved, "read") != "missing":
            _, data = _access.read_bytes(ctx, name, options.max_file_bytes)
            try:
                decoded = decode_text(data, name)
            except BinaryFileError as exc:
                raise ValueError(str(exc)) from None
            before, bom = decoded.text, decoded.bom
        else:
            before, bom = None, False
        try:
            after = apply_file_patch(before, fp)
        except PatchError as exc:
            raise ValueError(f"{exc}; nothing was written") from None
        if after is not None and len(after.encode("utf-8")) > options.max_file_bytes:
            raise ValueError(f"{name} would be larger than {options.max_file_bytes} bytes; nothing was written")
        current[resolved] = after
        label = _access.display_path(ctx, resolved, name)
        created = resolved not in steps and before is None
        if after is None:
            action, detail = "D", "deleted"
        elif created or (resolved in steps and steps[resolved].action == "A"):
            action, detail = "A", f"created, {_count_lines(after)} lines"
        else:
            action = "M"
            hunks = hunk_counts[resolved] = hunk_counts.get(resolved, 0) + len(fp.hunks)
            detail = f"{hunks} hunk{'s' if hunks != 1 else ''}"
        steps[resolved] = _Step(name, label, action, detail, after, bom)
    ctx.capabilities.check_planned_writes(
        list(steps),
        [p for p, step in steps.items() if step.new_text is not None],
        labels={p: step.label for p, step in steps.items()},
    )
    return list(steps.values())
