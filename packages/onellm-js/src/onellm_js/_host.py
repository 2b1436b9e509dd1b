"""The host side of `ctx`: what `ctx.readFile`, `ctx.writeFile`, `ctx.fetch`, `ctx.addCost` and `ctx.log` do.

Every function checks, in order: that the run is still open; that the script **declared** the capability
(`fileRead`, `fileWrite`, `network` in its `requires`); that the host **granted** it (`Capabilities` of the call); and
its per-run quota. Files go through the grant's double-checked open (`Capabilities.open_read` / `open_write`: the path
resolved and checked, opened without following a final link, resolved again and compared), requests through
`EgressClient` (the host checked before sending, every address when the connection opens, every redirect hop).

A failure reaches the script as a plain error with a short message (`ctx.readFile: no such file`): no host stack, no
absolute path, no Python type name. The path or URL the script passed is echoed, cut to 200 characters.

A run is closed on every way out. A closed run's functions do nothing; a request in flight is cancelled, and a write
already running is waited for, so that once the caller has the result nothing acts for the run any more.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import msgspec

from onellm.errors import CapabilityDeniedError

if TYPE_CHECKING:
    from onellm.messages import CostLine
    from onellm.tools import ToolContext
    from onellm_js._options import JsSandboxOptions

__all__ = ["CAPABILITY_GRANTS", "JsLogLine", "RunHost"]

_log = logging.getLogger("onellm.js")
_ENCODER = msgspec.json.Encoder()

CAPABILITY_GRANTS = {"fileRead": "files_read", "fileWrite": "files_write", "network": "network"}
"""The capabilities a script can declare in `requires`, and the core grant each one needs."""

_OPEN_LIMIT = 2.0
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_PATH_RULES = {
    "outside-roots": "outside the granted folders",
    "read-only": "under a read-only folder",
    "no-file-read": "no file grant",
    "no-file-write": "no writable file grant",
    "protected-state": "the runtime's own state",
    "repo-control": "a repository control path",
    "git-directory": "inside a git directory",
    "git-role": "a file git would run",
    "symlink-loop": "a symbolic link loop",
    "swapped": "it changed while being opened",
    "short-name": "a short-name alias",
    "windows-form": "not a valid path",
    "bad-path": "not a valid path",
}
_URL_RULES = {
    "network-off": "no network grant",
    "host-not-granted": "the host is not in the network grant",
    "address-not-allowed": "the host's address is not allowed",
    "scheme": "only http and https URLs are allowed",
    "bad-url": "not a valid URL",
    "redirect": "a redirect was refused",
    "redirect-body": "a redirect would resend the body to another site",
    "uds": "not reachable",
}


@dataclass(frozen=True, slots=True)
class JsLogLine:
    """One `ctx.log` line, as the host's log handler receives it."""

    text: str
    """The line (the arguments joined by spaces, as `console.log` shows them)."""
    file: str
    """The script's file name (`reshape.js`, `<code>`)."""
    tool: str | None = None
    """The tool being called, when the run is a tool call."""
    call_id: str | None = None
    """The tool call's id."""
    instance_id: str | None = None
    """The instance the call belongs to."""


class ScriptError(Exception):
    """A host function failed: `flavour` is how the script sees it (`error`, `range`, `type`)."""

    def __init__(self, message: str, flavour: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.flavour = flavour


def _shown(text: str) -> str:
    text = text if len(text) <= 200 else text[:200] + "..."
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno in (errno.EINVAL, errno.ENXIO, errno.ESPIPE):
        return "not a regular file"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    return "input/output error"


class RunHost:
    """The host functions of one run, and what the run added (cost lines, log lines, bytes held)."""

    def __init__(
        self,
        options: JsSandboxOptions,
        *,
        file: str,
        context: ToolContext | None,
        requires: frozenset[str],
        on_bytes: Callable[[int], bool] | None = None,
    ) -> None:
        self.options = options
        self.file = file
        self.context = context
        self.requires = requires
        self.open = True
        self.cost_lines: list[CostLine] = []
        self.logs: list[str] = []
        self.held_bytes = 0
        self.writes = 0
        self.write_bytes = 0
        self.fetches = 0
        self._log_chars = 0
        self._log_full = False
        self._on_bytes = on_bytes
        self.over_budget = False

    def close(self) -> None:
        self.open = False

    # -------------------------------------------------------------------------------------------- one-way calls

    def one_way(self, name: str, args: list[Any]) -> None:
        if not self.open:
            return
        if name == "log" and args and isinstance(args[0], str):
            self._log(args[0])
        elif name == "addCost" and args and isinstance(args[0], dict):
            self._add_cost(args[0])

    def _log(self, text: str) -> None:
        if self._log_full:
            return
        limit = self.options.max_log_chars
        if self._log_chars + len(text) > limit:
            self._log_full = True
            text = f"[ctx.log: the run wrote more than {limit} characters; later lines are dropped]"
        else:
            self._log_chars += len(text)
        self.logs.append(text)
        line = JsLogLine(
            text=text,
            file=self.file,
            tool=self.context.tool_name if self.context is not None else None,
            call_id=self.context.call_id if self.context is not None else None,
            instance_id=self.context.instance_id if self.context is not None else None,
        )
        if self.options.log is not None:
            self.options.log(line)
        else:
            _log.info("%s: %s", line.tool or line.file, text)

    def _add_cost(self, entry: dict[str, Any]) -> None:
        from onellm.messages import CostLine

        if len(self.cost_lines) >= self.options.max_cost_lines:
            return
        try:
            counter = entry["counter"]
            quantity = _decimal(entry["quantity"])
            unit_price = _decimal(entry["unitPrice"])
            per = _decimal(entry.get("per") or "1")
            multiplier = _decimal(entry.get("multiplier") or "1")
            label = entry.get("label")
            source = entry.get("source")
            if not isinstance(counter, str) or not counter or len(counter) > 256:
                return
            if label is not None and (not isinstance(label, str) or len(label) > 256):
                return
            if source is not None and (not isinstance(source, str) or len(source) > 256):
                return
            if per == 0:
                return
            line = CostLine.compute(
                counter,
                int(quantity) if quantity == quantity.to_integral_value() and abs(quantity) < 2**63 else quantity,
                int(per) if per == per.to_integral_value() and abs(per) < 2**63 else per,
                unit_price,
                multiplier,
                label=label,
                source=source,
            )
        except (KeyError, TypeError, ValueError, InvalidOperation, ArithmeticError):
            return
        self.cost_lines.append(line)
        if self.context is not None:
            self.context.add_cost_line(line)

    # -------------------------------------------------------------------------------------------- requests

    async def perform(self, name: str, args: list[Any]) -> tuple[bool | str, str]:
        """Run one host function. Returns (True, JSON text of the value) or (flavour, message)."""
        try:
            if not self.open:
                raise ScriptError(f"ctx.{name}: the run has ended")
            if name == "readFile" and len(args) == 1 and isinstance(args[0], str):
                value: Any = await self._read_file(args[0])
            elif name == "writeFile" and len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str):
                await self._write_file(args[0], args[1])
                value = None
            elif name == "fetch" and len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], dict):
                value = await self._fetch(args[0], args[1])
            else:
                raise ScriptError(f"ctx.{name}: unknown host function or arguments", "type")
        except ScriptError as exc:
            return exc.flavour, exc.message
        except Exception:
            # A fault of the host, not of the script: logged here with its traceback, a plain message to the script.
            _log.warning("ctx.%s failed in the host for %s", name, self.file, exc_info=True)
            return "error", f"ctx.{name}: the host could not complete the call"
        return True, _ENCODER.encode(value).decode("utf-8")

    def _need(self, function: str, capability: str) -> Any:
        """The double check: declared by the script, granted by the host. Returns the call's capabilities."""
        if capability not in self.requires:
            raise ScriptError(f"ctx.{function} needs '{capability}' in the tool's requires list")
        grant = CAPABILITY_GRANTS[capability]
        caps = self.context.capabilities if self.context is not None and self.context.has_capabilities else None
        allowed = caps is not None and (
            caps.has_file_read
            if grant == "files_read"
            else caps.has_file_write
            if grant == "files_write"
            else caps.network_enabled
        )
        if not allowed:
            what = {"fileRead": "reading files", "fileWrite": "writing files", "network": "the network"}[capability]
            raise ScriptError(f"ctx.{function}: {what} is not available (the host granted no {capability})")
        return caps

    def _hold(self, function: str, characters: int) -> None:
        held = self.held_bytes + 2 * characters
        if held > self.options.max_host_result_bytes:
            raise ScriptError(
                f"ctx.{function}: the run would hold more than {self.options.max_host_result_bytes} bytes of file text "
                "and response bodies",
                "range",
            )
        self.held_bytes = held
        if self._on_bytes is not None and not self._on_bytes(held):
            self.over_budget = True
            raise ScriptError(f"ctx.{function}: the JavaScript runs hold more bytes than the host allows", "range")

    def _path_error(self, function: str, path: str, exc: BaseException) -> ScriptError:
        if isinstance(exc, CapabilityDeniedError):
            reason = _PATH_RULES.get(exc.rule or "", "not granted")
            return ScriptError(f"ctx.{function}: {_shown(path)} is not available ({reason})")
        if isinstance(exc, OSError):
            return ScriptError(f"ctx.{function}: {_shown(path)}: {_os_reason(exc)}")
        if isinstance(exc, UnicodeDecodeError):
            return ScriptError(f"ctx.{function}: {_shown(path)} is not UTF-8 text")
        return ScriptError(f"ctx.{function}: {_shown(path)} could not be used")

    async def _read_file(self, path: str) -> str:
        import anyio
        import anyio.to_thread

        caps = self._need("readFile", "fileRead")
        base = self.context.working_directory if self.context is not None else None
        limit = self.options.max_file_bytes

        def read() -> bytes:
            with caps.open_read(path, base=base) as handle:
                data: bytes = handle.read(limit + 1)
                return data

        data: bytes | None = None
        try:
            with anyio.move_on_after(_OPEN_LIMIT):
                data = await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
        except (CapabilityDeniedError, OSError) as exc:
            raise self._path_error("readFile", path, exc) from None
        if data is None:
            _release_blocked_open(caps, path, base, write=False)
            raise ScriptError(
                f"ctx.readFile: {_shown(path)} did not open within {_OPEN_LIMIT:g} s (not a regular file)"
            )
        if len(data) > limit:
            raise ScriptError(f"ctx.readFile: {_shown(path)} is larger than {limit} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._path_error("readFile", path, exc) from None
        if text.startswith("\ufeff"):
            text = text[1:]
        self._hold("readFile", len(text))
        return text

    async def _write_file(self, path: str, text: str) -> None:
        import anyio.to_thread

        caps = self._need("writeFile", "fileWrite")
        if self.writes >= self.options.max_writes_per_run:
            raise ScriptError(f"ctx.writeFile: a run writes at most {self.options.max_writes_per_run} files", "range")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise ScriptError(f"ctx.writeFile: the text for {_shown(path)} holds a lone surrogate", "type") from None
        if self.write_bytes + len(data) > self.options.max_write_bytes_per_run:
            raise ScriptError(
                f"ctx.writeFile: a run writes at most {self.options.max_write_bytes_per_run} bytes", "range"
            )
        self.writes += 1
        self.write_bytes += len(data)
        base = self.context.working_directory if self.context is not None else None

        def write() -> None:
            with caps.open_write(path, base=base, make_parents=True) as handle:
                handle.write(data)

        try:
            # Not abandoned on cancellation: a write that has started is waited for, so none lands after the run ends.
            await anyio.to_thread.run_sync(write)
        except (CapabilityDeniedError, OSError) as exc:
            raise self._path_error("writeFile", path, exc) from None

    async def _fetch(self, url: str, request: dict[str, Any]) -> dict[str, Any]:
        import httpx

        caps = self._need("fetch", "network")
        if self.fetches >= self.options.max_fetches_per_run:
            raise ScriptError(f"ctx.fetch: a run sends at most {self.options.max_fetches_per_run} requests", "range")
        method = request.get("method", "GET")
        if not isinstance(method, str) or method.upper() not in _METHODS:
            raise ScriptError(f"ctx.fetch: method must be one of {', '.join(sorted(_METHODS))}", "type")
        headers = request.get("headers") or {}
        if not isinstance(headers, dict):
            raise ScriptError("ctx.fetch: headers must be an object of strings", "type")
        for key, value in headers.items():
            if (
                not key
                or not isinstance(value, str)
                or any(c in key for c in "\r\n:\x00 ")
                or any(c in value for c in "\r\n\x00")
            ):
                raise ScriptError(f"ctx.fetch: header {_shown(str(key))} has an invalid name or value", "type")
        body = request.get("body")
        content = None
        if body is not None:
            if not isinstance(body, str):
                raise ScriptError("ctx.fetch: body must be a string", "type")
            content = body.encode("utf-8", "replace")
            if len(content) > self.options.max_fetch_bytes:
                raise ScriptError(f"ctx.fetch: the body is larger than {self.options.max_fetch_bytes} bytes", "range")
        self.fetches += 1
        client = self._client(caps)
        limit = self.options.max_fetch_bytes
        try:
            async with client.stream(
                method.upper(), url, headers=headers, content=content, timeout=self.options.time_limit
            ) as response:
                data = bytearray()
                truncated = False
                async for chunk in response.aiter_raw():
                    data += chunk
                    if len(data) > limit:
                        truncated = True
                        del data[limit:]
                        break
                status = response.status_code
                response_headers = {k.lower(): v for k, v in response.headers.items()}
                encoding = response.charset_encoding or "utf-8"
        except CapabilityDeniedError as exc:
            reason = _URL_RULES.get(exc.rule or "", "not granted")
            raise ScriptError(f"ctx.fetch: {_shown(url)} is not available ({reason})") from None
        except httpx.TooManyRedirects:
            raise ScriptError(f"ctx.fetch: {_shown(url)}: too many redirects") from None
        except httpx.TimeoutException:
            raise ScriptError(f"ctx.fetch: {_shown(url)}: the request timed out") from None
        except httpx.ConnectError:
            raise ScriptError(f"ctx.fetch: {_shown(url)}: could not connect") from None
        except (httpx.HTTPError, OSError, ValueError):
            raise ScriptError(f"ctx.fetch: {_shown(url)}: the request failed") from None
        try:
            text = bytes(data).decode(encoding, "replace")
        except LookupError:
            text = bytes(data).decode("utf-8", "replace")
        self._hold("fetch", len(text))
        return {
            "status": status,
            "ok": 200 <= status < 300,
            "headers": response_headers,
            "text": text,
            "truncated": truncated,
        }

    def _client(self, caps: Any) -> Any:
        if self.options.egress is not None:
            return self.options.egress(caps)
        from onellm.capabilities import EgressClient

        return EgressClient.shared(caps)


def _decimal(value: Any) -> Decimal:
    if not isinstance(value, str) or len(value) > 256:
        raise ValueError("not a decimal text")
    number = Decimal(value)
    if not number.is_finite() or number < 0:
        raise ValueError("not a non-negative finite decimal")
    return number


def _release_blocked_open(caps: Any, path: str, base: Any, *, write: bool) -> None:
    """A thread blocked opening a pipe waits for a peer: open the other end (without waiting) so it returns."""
    with contextlib.suppress(Exception):
        resolved = caps.resolve_write(path, base=base) if write else caps.resolve_read(path, base=base)
        st = os.stat(resolved)
        if not stat.S_ISFIFO(st.st_mode):
            return
        flags = (os.O_RDONLY if write else os.O_WRONLY) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(resolved, flags)
        os.close(fd)
