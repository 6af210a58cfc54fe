"""KRaft metadata records: the value of every non-control record in ``__cluster_metadata``.

Record value frame (Kafka ``AbstractApiMessageSerde``)::

    frame_version  unsigned varint   must be 1 (0 was KRaft's 2.8 preview)
    api_key        unsigned varint   the record type, see RECORD_TYPES (at most 32767)
    version        unsigned varint   the record's schema version (at most 32767)
    message        the record's fields at that version (every version is *flexible*: compact
                   strings and arrays, a tagged-field section after each struct; see
                   :mod:`formats.metadata_fields`), and not one byte more

Metadata records carry no key. The field lists below follow Kafka's
``metadata/src/main/resources/common/metadata/*.json`` (names in snake_case, in schema order,
with the versions each field exists in, its nullable versions, its tag and its default);
``ClearElrRecord`` (type 28, Kafka 4.0+) was derived from the records Kafka 4.2 writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.metadata_fields import StructSpec, array, field, struct_of

FRAME_VERSION = 1


@dataclass(frozen=True)
class RecordType:
    """One metadata record type: Kafka's api key, enum name and known versions."""

    api_key: int
    name: str  # MetadataRecordType's name, e.g. TOPIC_RECORD
    lowest_version: int
    highest_version: int
    schema: StructSpec

    def knows(self, version: int) -> bool:
        return self.lowest_version <= version <= self.highest_version


def _endpoint(name: str) -> StructSpec:
    return struct_of(name, field("name", "string"), field("host", "string"), field("port", "uint16"),
                     field("security_protocol", "int16"))


def _feature(name: str) -> StructSpec:
    return struct_of(name, field("name", "string"), field("min_supported_version", "int16"),
                     field("max_supported_version", "int16"))


REGISTER_BROKER = struct_of(
    "RegisterBrokerRecord",
    field("broker_id", "int32"),
    field("is_migrating_zk_broker", "bool", "2+", default=False),
    field("incarnation_id", "uuid"),
    field("broker_epoch", "int64"),
    field("end_points", array(_endpoint("BrokerEndpoint"))),
    field("features", array(_feature("BrokerFeature"))),
    field("rack", "string", nullable="0+"),
    field("fenced", "bool", default=True),
    field("in_controlled_shutdown", "bool", "1+", default=False),
    field("log_dirs", array("uuid"), "3+", tag=0),
)
UNREGISTER_BROKER = struct_of("UnregisterBrokerRecord", field("broker_id", "int32"), field("broker_epoch", "int64"))
TOPIC = struct_of("TopicRecord", field("name", "string"), field("topic_id", "uuid"))
PARTITION = struct_of(
    "PartitionRecord",
    field("partition_id", "int32", default=-1),
    field("topic_id", "uuid"),
    field("replicas", array("int32")),
    field("isr", array("int32")),
    field("removing_replicas", array("int32")),
    field("adding_replicas", array("int32")),
    field("leader", "int32", default=-1),
    field("leader_recovery_state", "int8", tag=0, default=0),
    field("leader_epoch", "int32", default=-1),
    field("partition_epoch", "int32", default=-1),
    field("directories", array("uuid"), "1+"),
    field("eligible_leader_replicas", array("int32"), "2+", nullable="2+", tag=1, default=None),
    field("last_known_elr", array("int32"), "2+", nullable="2+", tag=2, default=None),
)
CONFIG = struct_of("ConfigRecord", field("resource_type", "int8"), field("resource_name", "string"),
                   field("name", "string"), field("value", "string", nullable="0+"))
PARTITION_CHANGE = struct_of(
    "PartitionChangeRecord",
    field("partition_id", "int32", default=-1),
    field("topic_id", "uuid"),
    field("isr", array("int32"), nullable="0+", tag=0, default=None),
    field("leader", "int32", tag=1, default=-2),
    field("replicas", array("int32"), nullable="0+", tag=2, default=None),
    field("removing_replicas", array("int32"), nullable="0+", tag=3, default=None),
    field("adding_replicas", array("int32"), nullable="0+", tag=4, default=None),
    field("leader_recovery_state", "int8", tag=5, default=-1),
    field("directories", array("uuid"), "1+", nullable="1+", tag=8, default=None),
    field("eligible_leader_replicas", array("int32"), "2+", nullable="2+", tag=6, default=None),
    field("last_known_elr", array("int32"), "2+", nullable="2+", tag=7, default=None),
)
FENCE_BROKER = struct_of("FenceBrokerRecord", field("id", "int32"), field("epoch", "int64"))
UNFENCE_BROKER = struct_of("UnfenceBrokerRecord", field("id", "int32"), field("epoch", "int64"))
REMOVE_TOPIC = struct_of("RemoveTopicRecord", field("topic_id", "uuid"))
DELEGATION_TOKEN = struct_of(
    "DelegationTokenRecord",
    field("owner", "string"), field("requester", "string"), field("renewers", array("string")),
    field("issue_timestamp", "int64"), field("max_timestamp", "int64"), field("expiration_timestamp", "int64"),
    field("token_id", "string"),
)
USER_SCRAM_CREDENTIAL = struct_of(
    "UserScramCredentialRecord",
    field("name", "string"), field("mechanism", "int8"), field("salt", "bytes"),
    field("stored_key", "bytes"), field("server_key", "bytes"), field("iterations", "int32"),
)
FEATURE_LEVEL = struct_of("FeatureLevelRecord", field("name", "string"), field("feature_level", "int16"))
CLIENT_QUOTA = struct_of(
    "ClientQuotaRecord",
    field("entity", array(struct_of("EntityData", field("entity_type", "string"),
                                    field("entity_name", "string", nullable="0+")))),
    field("key", "string"), field("value", "float64"), field("remove", "bool"),
)
PRODUCER_IDS = struct_of("ProducerIdsRecord", field("broker_id", "int32"),
                         field("broker_epoch", "int64", default=-1), field("next_producer_id", "int64"))
BROKER_REGISTRATION_CHANGE = struct_of(
    "BrokerRegistrationChangeRecord",
    field("broker_id", "int32"),
    field("broker_epoch", "int64"),
    field("fenced", "int8", tag=0),
    field("in_controlled_shutdown", "int8", "1+", tag=1),
    field("log_dirs", array("uuid"), "2+", tag=2),
)
ACCESS_CONTROL_ENTRY = struct_of(
    "AccessControlEntryRecord",
    field("id", "uuid"), field("resource_type", "int8"), field("resource_name", "string"),
    field("pattern_type", "int8"), field("principal", "string"), field("host", "string"),
    field("operation", "int8"), field("permission_type", "int8"),
)
REMOVE_ACCESS_CONTROL_ENTRY = struct_of("RemoveAccessControlEntryRecord", field("id", "uuid"))
NO_OP = struct_of("NoOpRecord")
ZK_MIGRATION_STATE = struct_of("ZkMigrationStateRecord", field("zk_migration_state", "int8"))
REMOVE_USER_SCRAM_CREDENTIAL = struct_of("RemoveUserScramCredentialRecord", field("name", "string"),
                                         field("mechanism", "int8"))
BEGIN_TRANSACTION = struct_of("BeginTransactionRecord",
                              field("name", "string", nullable="0+", tag=0, default=None))
END_TRANSACTION = struct_of("EndTransactionRecord")
ABORT_TRANSACTION = struct_of("AbortTransactionRecord",
                              field("reason", "string", nullable="0+", tag=0, default=None))
REMOVE_DELEGATION_TOKEN = struct_of("RemoveDelegationTokenRecord", field("token_id", "string"))
REGISTER_CONTROLLER = struct_of(
    "RegisterControllerRecord",
    field("controller_id", "int32"),
    field("incarnation_id", "uuid"),
    field("zk_migration_ready", "bool"),
    field("end_points", array(_endpoint("ControllerEndpoint"))),
    field("features", array(_feature("ControllerFeature"))),
)
CLEAR_ELR = struct_of("ClearElrRecord", field("topic_name", "string", nullable="0+"))

RECORD_TYPES = {t.api_key: t for t in (
    RecordType(0, "REGISTER_BROKER_RECORD", 0, 3, REGISTER_BROKER),
    RecordType(1, "UNREGISTER_BROKER_RECORD", 0, 0, UNREGISTER_BROKER),
    RecordType(2, "TOPIC_RECORD", 0, 0, TOPIC),
    RecordType(3, "PARTITION_RECORD", 0, 2, PARTITION),
    RecordType(4, "CONFIG_RECORD", 0, 0, CONFIG),
    RecordType(5, "PARTITION_CHANGE_RECORD", 0, 2, PARTITION_CHANGE),
    RecordType(7, "FENCE_BROKER_RECORD", 0, 0, FENCE_BROKER),
    RecordType(8, "UNFENCE_BROKER_RECORD", 0, 0, UNFENCE_BROKER),
    RecordType(9, "REMOVE_TOPIC_RECORD", 0, 0, REMOVE_TOPIC),
    RecordType(10, "DELEGATION_TOKEN_RECORD", 0, 0, DELEGATION_TOKEN),
    RecordType(11, "USER_SCRAM_CREDENTIAL_RECORD", 0, 0, USER_SCRAM_CREDENTIAL),
    RecordType(12, "FEATURE_LEVEL_RECORD", 0, 0, FEATURE_LEVEL),
    RecordType(14, "CLIENT_QUOTA_RECORD", 0, 0, CLIENT_QUOTA),
    RecordType(15, "PRODUCER_IDS_RECORD", 0, 0, PRODUCER_IDS),
    RecordType(17, "BROKER_REGISTRATION_CHANGE_RECORD", 0, 2, BROKER_REGISTRATION_CHANGE),
    RecordType(18, "ACCESS_CONTROL_ENTRY_RECORD", 0, 0, ACCESS_CONTROL_ENTRY),
    RecordType(19, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0, 0, REMOVE_ACCESS_CONTROL_ENTRY),
    RecordType(20, "NO_OP_RECORD", 0, 0, NO_OP),
    RecordType(21, "ZK_MIGRATION_STATE_RECORD", 0, 0, ZK_MIGRATION_STATE),
    RecordType(22, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0, 0, REMOVE_USER_SCRAM_CREDENTIAL),
    RecordType(23, "BEGIN_TRANSACTION_RECORD", 0, 0, BEGIN_TRANSACTION),
    RecordType(24, "END_TRANSACTION_RECORD", 0, 0, END_TRANSACTION),
    RecordType(25, "ABORT_TRANSACTION_RECORD", 0, 0, ABORT_TRANSACTION),
    RecordType(26, "REMOVE_DELEGATION_TOKEN_RECORD", 0, 0, REMOVE_DELEGATION_TOKEN),
    RecordType(27, "REGISTER_CONTROLLER_RECORD", 0, 0, REGISTER_CONTROLLER),
    RecordType(28, "CLEAR_ELR_RECORD", 0, 0, CLEAR_ELR),
)}

__all__ = ["FRAME_VERSION", "RECORD_TYPES", "RecordType"]
