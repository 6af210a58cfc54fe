"""Control records: the key and value of each record in a control batch (§4).

Control record key (every control type)::

    offset width field     notes
    ------ ----- --------- --------------------------------------------------------------
         0     2 version   int16, 0 (negative = corruption; larger versions read as 0)
         2     2 type      int16, see CONTROL_TYPES
         4     . (ignored) a key must be at least 4 bytes

End transaction marker value (ABORT = 0, COMMIT = 1), at least 6 bytes::

         0     2 version            int16, 0 (negative = corruption)
         2     4 coordinator_epoch  int32
         6     . (ignored)

KRaft control values are Kafka *flexible* message encodings read at schema version 0, with no
version prefix of their own (the ``version`` field is the message's first int16)::

    LEADER_CHANGE   (2)  LeaderChangeMessage: version int16, leader_id int32,
                         voters []Voter, granting_voters []Voter  (Voter v0: voter_id int32)
    SNAPSHOT_HEADER (3)  SnapshotHeaderRecord: version int16, last_contained_log_timestamp int64
    SNAPSHOT_FOOTER (4)  SnapshotFooterRecord: version int16
    KRAFT_VERSION   (5)  KRaftVersionRecord: version int16, kraft_version int16
    KRAFT_VOTERS    (6)  VotersRecord: version int16, voters []{voter_id int32,
                         voter_directory_id uuid, endpoints []{name string, host string,
                         port uint16}, kraft_version_feature {min_supported_version int16,
                         max_supported_version int16}}

Every struct in a flexible message ends with tagged fields; arrays and strings are compact.
"""

from __future__ import annotations

from construct import GreedyBytes, Int16sb, Int32sb, Int64sb, Struct

from seglog_cli.formats.protocol import CompactArray, CompactString, TaggedFields, Uint16, Uuid

# The type ids and sizes, in formats/layout.py: the engine reads keys and markers with struct
from seglog_cli.formats.layout import (  # noqa: F401 - part of this module's interface
    ABORT,
    COMMIT,
    CONTROL_KEY_SIZE,
    CONTROL_TYPES,
    END_TXN_MARKER_VALUE_SIZE,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
)

ControlRecordKey = Struct(
    "version" / Int16sb,
    "type" / Int16sb,
    "rest" / GreedyBytes,
)

EndTxnMarkerValue = Struct(
    "version" / Int16sb,
    "coordinator_epoch" / Int32sb,
    "rest" / GreedyBytes,
)

Voter = Struct(
    "voter_id" / Int32sb,
    "tagged_fields" / TaggedFields,
)

LeaderChangeMessage = Struct(
    "version" / Int16sb,
    "leader_id" / Int32sb,
    "voters" / CompactArray(Voter),
    "granting_voters" / CompactArray(Voter),
    "tagged_fields" / TaggedFields,
)

SnapshotHeaderRecord = Struct(
    "version" / Int16sb,
    "last_contained_log_timestamp" / Int64sb,
    "tagged_fields" / TaggedFields,
)

SnapshotFooterRecord = Struct(
    "version" / Int16sb,
    "tagged_fields" / TaggedFields,
)

KRaftVersionRecord = Struct(
    "version" / Int16sb,
    "kraft_version" / Int16sb,
    "tagged_fields" / TaggedFields,
)

VoterEndpoint = Struct(
    "name" / CompactString,
    "host" / CompactString,
    "port" / Uint16,
    "tagged_fields" / TaggedFields,
)

KRaftVersionFeature = Struct(
    "min_supported_version" / Int16sb,
    "max_supported_version" / Int16sb,
    "tagged_fields" / TaggedFields,
)

VotersRecordVoter = Struct(
    "voter_id" / Int32sb,
    "voter_directory_id" / Uuid,
    "endpoints" / CompactArray(VoterEndpoint),
    "kraft_version_feature" / KRaftVersionFeature,
    "tagged_fields" / TaggedFields,
)

VotersRecord = Struct(
    "version" / Int16sb,
    "voters" / CompactArray(VotersRecordVoter),
    "tagged_fields" / TaggedFields,
)

# Schema of the value of each KRaft control type (read at version 0).
KRAFT_CONTROL_VALUES = {
    LEADER_CHANGE: LeaderChangeMessage,
    SNAPSHOT_HEADER: SnapshotHeaderRecord,
    SNAPSHOT_FOOTER: SnapshotFooterRecord,
    KRAFT_VERSION: KRaftVersionRecord,
    KRAFT_VOTERS: VotersRecord,
}
