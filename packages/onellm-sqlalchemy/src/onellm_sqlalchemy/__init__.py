"""onellm-sqlalchemy: onellm instances and records in the database of an existing SQLAlchemy 2 application.

`tables(metadata)` adds onellm's three tables to the application's `MetaData`, so its migrations see them;
`SqlAlchemyInstanceStore` keeps one row per instance (its file text, byte for byte) with optimistic concurrency and
leases as rows that lapse when their holder stops renewing them; `SqlAlchemyRecordSink` keeps one row per record and
sums exact costs over an instance and the instances it called or spawned. Both work on a sync `Engine` or
`sessionmaker` and on an `AsyncEngine` or `async_sessionmaker`. No driver and no migrations are shipped.
"""

from onellm_sqlalchemy._sink import SqlAlchemyRecordSink
from onellm_sqlalchemy._store import SqlAlchemyInstanceLease, SqlAlchemyInstanceStore
from onellm_sqlalchemy._tables import Money, OnellmTables, tables
from onellm_sqlalchemy._version import __version__

__all__ = [
    "Money",
    "OnellmTables",
    "SqlAlchemyInstanceLease",
    "SqlAlchemyInstanceStore",
    "SqlAlchemyRecordSink",
    "__version__",
    "tables",
]
