"""Records: the append-only audit trail of a run (format: `spec/records.md`).

Instance state is the truth; records show how it got there. The runtime hands each record to its sinks:
`JsonlRecordSink` (one `<instanceId>.jsonl` per instance), `EventRecordSink` (calls your handlers), or several at
once through `RecordSinks`, where a failing sink is reported and skipped and never fails a run. `read_records` reads
JSON lines back, skipping kinds it does not know and keeping fields it does not know.
"""

from __future__ import annotations

from onellm._public import publish as _publish
from onellm.records._kinds import (
    RECORD_KINDS,
    ApprovalRecord,
    CompactionRecord,
    ErrorRecord,
    HookRecord,
    InferenceRecord,
    MessageRecord,
    RawTurnRecord,
    Record,
    RunRecord,
    TaskCompletionRecord,
    ToolCallRecord,
    encode_record,
    parse_line,
    read_records,
    total_cost,
)
from onellm.records._sinks import EventRecordSink, JsonlRecordSink, RecordSink, RecordSinkFailure, RecordSinks

__all__ = [
    "RECORD_KINDS",
    "ApprovalRecord",
    "CompactionRecord",
    "ErrorRecord",
    "EventRecordSink",
    "HookRecord",
    "InferenceRecord",
    "JsonlRecordSink",
    "MessageRecord",
    "RawTurnRecord",
    "Record",
    "RecordSink",
    "RecordSinkFailure",
    "RecordSinks",
    "RunRecord",
    "TaskCompletionRecord",
    "ToolCallRecord",
    "encode_record",
    "parse_line",
    "read_records",
    "total_cost",
]

_publish("onellm", EventRecordSink, JsonlRecordSink, RecordSinks)
_publish(
    "onellm.records",
    ApprovalRecord,
    CompactionRecord,
    ErrorRecord,
    HookRecord,
    InferenceRecord,
    MessageRecord,
    RawTurnRecord,
    Record,
    RecordSink,
    RecordSinkFailure,
    RunRecord,
    TaskCompletionRecord,
    ToolCallRecord,
)
