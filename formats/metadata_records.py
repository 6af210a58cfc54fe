"""KRaft metadata records: the value of every non-control record in ``__cluster_metadata``.

Record value frame (Kafka ``AbstractApiMessageSerde``)::

    frame_version  unsigned varint   must be 1 (0 was KRaft's 2.8 preview)
    api_key        unsigned varint   the record type, see RECORD_TYPES (at most 32767)
    version        unsigned varint   the record's schema version (at most 32767)
    message        the record's fields at that version (every version is *flexible*: compact
                   strings and arrays, a tagged-field section after each struct; see
                   :mod:`seglog_cli.formats.kafka_message`), and not one byte more

Metadata records carry no key. The field lists below follow Kafka's
``metadata/src/main/resources/common/metadata/*.json`` (names in snake_case, in schema order,
with the versions each field exists in, its nullable versions, its tag and its default; each
record's ``valid`` versions are the ones seglog knows);
``ClearElrRecord`` (type 28, Kafka 4.0+) was derived from the records Kafka 4.2 writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.formats.kafka_message import ArrayOf, Field as F, Message, versions

FRAME_VERSION = 1


@dataclass(frozen=True)
class RecordType:
    """One metadata record type: Kafka's api key, enum name and message (its versions)."""

    api_key: int
    name: str  # MetadataRecordType's name, e.g. TOPIC_RECORD
    schema: Message

    @property
    def lowest_version(self) -> int:
        return versions(self.schema.valid)[0]

    @property
    def highest_version(self) -> int:
        return versions(self.schema.valid)[1]

    def knows(self, version: int) -> bool:
        return self.schema.is_valid(version)


def _record(name: str, *fields: F, valid: str = "0") -> Message:
    """A metadata record: every version is flexible."""
    return Message(name, fields, valid=valid, flexible="0+")


ENDPOINT = ArrayOf((F("name", "string"), F("host", "string"), F("port", "uint16"),
                    F("security_protocol", "int16")))
FEATURE = ArrayOf((F("name", "string"), F("min_supported_version", "int16"), F("max_supported_version", "int16")))

REGISTER_BROKER = _record(
    "RegisterBrokerRecord",
    F("broker_id", "int32"),
    F("is_migrating_zk_broker", "bool", "2+", default=False),
    F("incarnation_id", "uuid"),
    F("broker_epoch", "int64"),
    F("end_points", ENDPOINT),
    F("features", FEATURE),
    F("rack", "string", nullable="0+"),
    F("fenced", "bool", default=True),
    F("in_controlled_shutdown", "bool", "1+", default=False),
    F("log_dirs", "[]uuid", "3+", tag=0),
    valid="0-3",
)
UNREGISTER_BROKER = _record("UnregisterBrokerRecord", F("broker_id", "int32"), F("broker_epoch", "int64"))
TOPIC = _record("TopicRecord", F("name", "string"), F("topic_id", "uuid"))
PARTITION = _record(
    "PartitionRecord",
    F("partition_id", "int32", default=-1),
    F("topic_id", "uuid"),
    F("replicas", "[]int32"),
    F("isr", "[]int32"),
    F("removing_replicas", "[]int32"),
    F("adding_replicas", "[]int32"),
    F("leader", "int32", default=-1),
    F("leader_recovery_state", "int8", tag=0, default=0),
    F("leader_epoch", "int32", default=-1),
    F("partition_epoch", "int32", default=-1),
    F("directories", "[]uuid", "1+"),
    F("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=1, default=None),
    F("last_known_elr", "[]int32", "2+", nullable="2+", tag=2, default=None),
    valid="0-2",
)
CONFIG = _record("ConfigRecord", F("resource_type", "int8"), F("resource_name", "string"),
                 F("name", "string"), F("value", "string", nullable="0+"))
PARTITION_CHANGE = _record(
    "PartitionChangeRecord",
    F("partition_id", "int32", default=-1),
    F("topic_id", "uuid"),
    F("isr", "[]int32", nullable="0+", tag=0, default=None),
    F("leader", "int32", tag=1, default=-2),
    F("replicas", "[]int32", nullable="0+", tag=2, default=None),
    F("removing_replicas", "[]int32", nullable="0+", tag=3, default=None),
    F("adding_replicas", "[]int32", nullable="0+", tag=4, default=None),
    F("leader_recovery_state", "int8", tag=5, default=-1),
    F("directories", "[]uuid", "1+", nullable="1+", tag=8, default=None),
    F("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=6, default=None),
    F("last_known_elr", "[]int32", "2+", nullable="2+", tag=7, default=None),
    valid="0-2",
)
FENCE_BROKER = _record("FenceBrokerRecord", F("id", "int32"), F("epoch", "int64"))
UNFENCE_BROKER = _record("UnfenceBrokerRecord", F("id", "int32"), F("epoch", "int64"))
REMOVE_TOPIC = _record("RemoveTopicRecord", F("topic_id", "uuid"))
DELEGATION_TOKEN = _record(
    "DelegationTokenRecord",
    F("owner", "string"), F("requester", "string"), F("renewers", "[]string"),
    F("issue_timestamp", "int64"), F("max_timestamp", "int64"), F("expiration_timestamp", "int64"),
    F("token_id", "string"),
)
USER_SCRAM_CREDENTIAL = _record(
    "UserScramCredentialRecord",
    F("name", "string"), F("mechanism", "int8"), F("salt", "bytes"),
    F("stored_key", "bytes"), F("server_key", "bytes"), F("iterations", "int32"),
)
FEATURE_LEVEL = _record("FeatureLevelRecord", F("name", "string"), F("feature_level", "int16"))
CLIENT_QUOTA = _record(
    "ClientQuotaRecord",
    F("entity", ArrayOf((F("entity_type", "string"), F("entity_name", "string", nullable="0+")))),
    F("key", "string"), F("value", "float64"), F("remove", "bool"),
)
PRODUCER_IDS = _record("ProducerIdsRecord", F("broker_id", "int32"),
                       F("broker_epoch", "int64", default=-1), F("next_producer_id", "int64"))
BROKER_REGISTRATION_CHANGE = _record(
    "BrokerRegistrationChangeRecord",
    F("broker_id", "int32"),
    F("broker_epoch", "int64"),
    F("fenced", "int8", tag=0),
    F("in_controlled_shutdown", "int8", "1+", tag=1),
    F("log_dirs", "[]uuid", "2+", tag=2),
    valid="0-2",
)
ACCESS_CONTROL_ENTRY = _record(
    "AccessControlEntryRecord",
    F("id", "uuid"), F("resource_type", "int8"), F("resource_name", "string"),
    F("pattern_type", "int8"), F("principal", "string"), F("host", "string"),
    F("operation", "int8"), F("permission_type", "int8"),
)
REMOVE_ACCESS_CONTROL_ENTRY = _record("RemoveAccessControlEntryRecord", F("id", "uuid"))
NO_OP = _record("NoOpRecord")
ZK_MIGRATION_STATE = _record("ZkMigrationStateRecord", F("zk_migration_state", "int8"))
REMOVE_USER_SCRAM_CREDENTIAL = _record("RemoveUserScramCredentialRecord", F("name", "string"),
                                       F("mechanism", "int8"))
BEGIN_TRANSACTION = _record("BeginTransactionRecord",
                            F("name", "string", nullable="0+", tag=0, default=None))
END_TRANSACTION = _record("EndTransactionRecord")
ABORT_TRANSACTION = _record("AbortTransactionRecord",
                            F("reason", "string", nullable="0+", tag=0, default=None))
REMOVE_DELEGATION_TOKEN = _record("RemoveDelegationTokenRecord", F("token_id", "string"))
REGISTER_CONTROLLER = _record(
    "RegisterControllerRecord",
    F("controller_id", "int32"),
    F("incarnation_id", "uuid"),
    F("zk_migration_ready", "bool"),
    F("end_points", ENDPOINT),
    F("features", FEATURE),
)
CLEAR_ELR = _record("ClearElrRecord", F("topic_name", "string", nullable="0+"))

RECORD_TYPES = {t.api_key: t for t in (
    RecordType(0, "REGISTER_BROKER_RECORD", REGISTER_BROKER),
    RecordType(1, "UNREGISTER_BROKER_RECORD", UNREGISTER_BROKER),
    RecordType(2, "TOPIC_RECORD", TOPIC),
    RecordType(3, "PARTITION_RECORD", PARTITION),
    RecordType(4, "CONFIG_RECORD", CONFIG),
    RecordType(5, "PARTITION_CHANGE_RECORD", PARTITION_CHANGE),
    RecordType(7, "FENCE_BROKER_RECORD", FENCE_BROKER),
    RecordType(8, "UNFENCE_BROKER_RECORD", UNFENCE_BROKER),
    RecordType(9, "REMOVE_TOPIC_RECORD", REMOVE_TOPIC),
    RecordType(10, "DELEGATION_TOKEN_RECORD", DELEGATION_TOKEN),
    RecordType(11, "USER_SCRAM_CREDENTIAL_RECORD", USER_SCRAM_CREDENTIAL),
    RecordType(12, "FEATURE_LEVEL_RECORD", FEATURE_LEVEL),
    RecordType(14, "CLIENT_QUOTA_RECORD", CLIENT_QUOTA),
    RecordType(15, "PRODUCER_IDS_RECORD", PRODUCER_IDS),
    RecordType(17, "BROKER_REGISTRATION_CHANGE_RECORD", BROKER_REGISTRATION_CHANGE),
    RecordType(18, "ACCESS_CONTROL_ENTRY_RECORD", ACCESS_CONTROL_ENTRY),
    RecordType(19, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", REMOVE_ACCESS_CONTROL_ENTRY),
    RecordType(20, "NO_OP_RECORD", NO_OP),
    RecordType(21, "ZK_MIGRATION_STATE_RECORD", ZK_MIGRATION_STATE),
    RecordType(22, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", REMOVE_USER_SCRAM_CREDENTIAL),
    RecordType(23, "BEGIN_TRANSACTION_RECORD", BEGIN_TRANSACTION),
    RecordType(24, "END_TRANSACTION_RECORD", END_TRANSACTION),
    RecordType(25, "ABORT_TRANSACTION_RECORD", ABORT_TRANSACTION),
    RecordType(26, "REMOVE_DELEGATION_TOKEN_RECORD", REMOVE_DELEGATION_TOKEN),
    RecordType(27, "REGISTER_CONTROLLER_RECORD", REGISTER_CONTROLLER),
    RecordType(28, "CLEAR_ELR_RECORD", CLEAR_ELR),
)}

__all__ = ["FRAME_VERSION", "RECORD_TYPES", "RecordType"]
