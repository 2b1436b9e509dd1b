"""onellm-sqlite: onellm instances and records in one SQLite file, through the standard library's `sqlite3`.

`SqliteInstanceStore` keeps one row per instance (its file text, byte for byte, and the header fields `list` filters
on), with leases as rows that lapse when their holder stops renewing them; `SqliteRecordSink` keeps one row per
record (its JSON line, and the columns a query needs) and sums exact costs over an instance and the instances it
called or spawned. Both may share one file; several processes may share it too.
"""

from onellm_sqlite._schema import SCHEMA_VERSION
from onellm_sqlite._sink import SqliteRecordSink
from onellm_sqlite._store import SqliteInstanceLease, SqliteInstanceStore
from onellm_sqlite._version import __version__

__all__ = ["SCHEMA_VERSION", "SqliteInstanceLease", "SqliteInstanceStore", "SqliteRecordSink", "__version__"]
