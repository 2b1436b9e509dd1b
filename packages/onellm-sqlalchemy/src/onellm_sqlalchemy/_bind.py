"""One way to run a piece of database work in a transaction, whatever the application handed us.

The store and the sink take an `Engine`, a `sessionmaker`, an `AsyncEngine` or an `async_sessionmaker`. Their work is
written once, as functions of a synchronous `Connection`; `Bind.run` runs such a function in one transaction: on a
worker thread for the synchronous kinds (so the event loop never waits on the database), and through
`AsyncConnection.run_sync` for the asynchronous ones (SQLAlchemy's own bridge, which drives the async driver from
that function). Database failures become `StorageError`s naming the database (its URL without the password) and what
was being done; the statement's parameters, which may hold a whole instance, stay out of the message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from onellm.errors import StorageError

__all__ = ["Bind", "BindLike"]

T = TypeVar("T")

BindLike = Any
"""An `Engine`, `sessionmaker`, `AsyncEngine` or `async_sessionmaker`."""

_MISSING_TABLE = ("does not exist", "no such table", "doesn't exist", "invalid object name", "undefined table")


class Bind:
    """Runs work on the application's engine or session factory, sync or async."""

    def __init__(self, bind: BindLike, tables_hint: str) -> None:
        self._hint = tables_hint
        self.is_async = False
        self._engine: Engine | None = None
        self._maker: sessionmaker[Session] | None = None
        self._async_engine: Any = None
        self._async_maker: Any = None
        if isinstance(bind, Engine):
            self._engine = bind
            url = bind.url
        elif isinstance(bind, sessionmaker):
            self._maker = bind
            url = _url_of(bind.kw.get("bind"))
        else:
            try:
                from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
            except ImportError:  # pragma: no cover - SQLAlchemy always ships it
                AsyncEngine = async_sessionmaker = None  # type: ignore[assignment,misc]
            if AsyncEngine is not None and isinstance(bind, AsyncEngine):
                self._async_engine = bind
                self.is_async = True
                url = bind.url
            elif async_sessionmaker is not None and isinstance(bind, async_sessionmaker):
                self._async_maker = bind
                self.is_async = True
                url = _url_of(bind.kw.get("bind"))
            else:
                raise TypeError(
                    "expected a SQLAlchemy Engine, sessionmaker, AsyncEngine or async_sessionmaker, "
                    f"not {type(bind).__name__}"
                )
        self.name = url if isinstance(url, str) else url.render_as_string(hide_password=True)
        """The database, as its URL without the password."""

    async def run(self, operation: str, work: Callable[[Connection], T]) -> T:
        """Run `work` in one transaction (committed when it returns, rolled back when it raises)."""
        try:
            if self._async_engine is not None:
                async with self._async_engine.begin() as conn:
                    result: T = await conn.run_sync(work)
                    return result
            if self._async_maker is not None:
                async with self._async_maker.begin() as session:
                    result = await session.run_sync(lambda s: work(s.connection()))
                    return result
        except SQLAlchemyError as exc:
            raise self.error(operation, exc) from exc
        return await anyio.to_thread.run_sync(self.run_sync, operation, work)

    def run_sync(self, operation: str, work: Callable[[Connection], T]) -> T:
        """The blocking form of `run`, for an `Engine` or `sessionmaker`.

        Raises:
            TypeError: the bind is asynchronous; use the async method.
        """
        try:
            if self._engine is not None:
                with self._engine.begin() as conn:
                    return work(conn)
            if self._maker is not None:
                with self._maker.begin() as session:
                    return work(session.connection())
        except SQLAlchemyError as exc:
            raise self.error(operation, exc) from exc
        raise TypeError(
            f"cannot {operation} without awaiting: this store works on an AsyncEngine; use the async method"
        )

    def error(self, operation: str, exc: SQLAlchemyError) -> StorageError:
        """A `StorageError` for a failed database call: the driver's message, never the statement's parameters."""
        detail = str(exc.orig) if isinstance(exc, DBAPIError) and exc.orig is not None else type(exc).__name__
        if not isinstance(exc, DBAPIError):
            detail = str(exc).split("\n", 1)[0]
        detail = " ".join(detail.split())
        if len(detail) > 400:
            detail = detail[:400] + "..."
        message = f"{self.name}: cannot {operation}: {detail}"
        if any(marker in detail.lower() for marker in _MISSING_TABLE):
            message += f" ({self._hint})"
        return StorageError(message, path=self.name, operation=operation)


def _url_of(engine: Any) -> Any:
    if engine is None:
        return "<a session factory without a bind>"
    url = getattr(engine, "url", None)
    return url if url is not None else repr(engine)
