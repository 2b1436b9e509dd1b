"""Instances and instance stores (`spec/instances.md`).

An `Instance` is one run of a definition with everything it said and did; it reads and writes the instance file
format (`Instance.load`, `loads`, `dumps`, `save`). Stores keep instances between runs: `FileInstanceStore` (one
`<id>.yaml` per instance in a directory) and `MemoryInstanceStore`, both behind the `InstanceStore` protocol, with
leases that keep a second runner out.
"""

from onellm._public import publish as _publish
from onellm.instances._assets import AssetStore, FileAssetStore, MemoryAssetStore
from onellm.instances._file_store import FileInstanceStore
from onellm.instances._ids import InvalidInstanceIdError, is_valid_instance_id, new_instance_id, validate_instance_id
from onellm.instances._memory_store import MemoryInstanceStore
from onellm.instances._model import HEADER_KEYS, Instance, InstanceState, read_header
from onellm.instances._parts import AskUser, Compaction, ForkOrigin, InstanceFailure, PendingApproval
from onellm.instances._store import InstanceLease, InstanceQuery, InstanceStore, InstanceSummary

__all__ = [
    "HEADER_KEYS",
    "AskUser",
    "AssetStore",
    "Compaction",
    "FileAssetStore",
    "FileInstanceStore",
    "ForkOrigin",
    "Instance",
    "InstanceFailure",
    "InstanceLease",
    "InstanceQuery",
    "InstanceState",
    "InstanceStore",
    "InstanceSummary",
    "InvalidInstanceIdError",
    "MemoryAssetStore",
    "MemoryInstanceStore",
    "PendingApproval",
    "is_valid_instance_id",
    "new_instance_id",
    "read_header",
    "validate_instance_id",
]

_publish("onellm", FileInstanceStore, Instance, InstanceStore, MemoryInstanceStore)
_publish(
    "onellm.instances",
    AskUser,
    AssetStore,
    Compaction,
    FileAssetStore,
    ForkOrigin,
    InstanceFailure,
    InstanceLease,
    InstanceQuery,
    InstanceState,
    InstanceSummary,
    MemoryAssetStore,
    PendingApproval,
)
