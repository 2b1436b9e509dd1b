"""The store conformance suite, run against the two stores core ships."""

from __future__ import annotations

import contextlib
from pathlib import Path

from onellm.instances import FileInstanceStore, InstanceStore, MemoryInstanceStore
from onellm.testing import disk_fault
from onellm.testing.store_conformance import InstanceStoreConformance


class TestFileInstanceStore(InstanceStoreConformance):
    other_process_factory = "onellm.instances:FileInstanceStore"

    def open_store(self, location: Path) -> InstanceStore:
        return FileInstanceStore(location, durable=False)

    def storage_fault(self, location: Path, fault: str) -> contextlib.AbstractContextManager[object]:
        return disk_fault(fault)


class TestDurableFileInstanceStore(InstanceStoreConformance):
    def open_store(self, location: Path) -> InstanceStore:
        return FileInstanceStore(location)

    def storage_fault(self, location: Path, fault: str) -> contextlib.AbstractContextManager[object]:
        return disk_fault(fault)


_memory_stores: dict[Path, MemoryInstanceStore] = {}


class TestMemoryInstanceStore(InstanceStoreConformance):
    def open_store(self, location: Path) -> InstanceStore:
        # Memory has no shared storage: two handles on one location are the same store.
        return _memory_stores.setdefault(location, MemoryInstanceStore())
