"""Replaying metadata records into an image, one at a time (``MetadataDelta.replay``).

:class:`MetadataDelta` applies each decoded record to its :class:`MetadataImage` as Kafka's
deltas do (``TopicsDelta``, ``ClusterDelta``, ``FeaturesDelta``, ``ConfigurationsDelta``,
``ClientQuotasDelta``, ``ScramDelta``, ``AclsDelta``, ``DelegationTokenDelta``,
``ProducerIdsDelta``). Records between ``BEGIN_TRANSACTION_RECORD`` and
``END_TRANSACTION_RECORD`` are held back and applied at the end; an
``ABORT_TRANSACTION_RECORD`` drops them, as ``MetadataBatchLoader`` does. An observer (any
object with ``partition_changed`` / ``broker_changed`` methods) hears of every change, with the
record's offset and batch time, before and after.
"""

from __future__ import annotations

from seglog_cli.storage.metadata.image import (
    AclEntry,
    BrokerRegistration,
    ControllerRegistration,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    SCRAM_MECHANISMS,
    TopicImage,
)

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
TRANSACTION_TYPES = ("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD")
# BrokerRegistrationFencingChange / BrokerRegistrationInControlledShutdownChange
FENCING_CHANGE = {1: True, 0: None, -1: False}
CONTROLLED_SHUTDOWN_CHANGE = {1: True, 0: None}


class MetadataDelta:
    """Replays records into ``image`` (changed in place). ``observer``: told of each partition
    and broker change. ``pending``: the records of an open metadata transaction, not applied."""

    def __init__(self, image: MetadataImage | None = None, observer=None):
        self.image = image if image is not None else MetadataImage()
        self.observer = observer
        self.pending: list[tuple] | None = None
        self.aborted = 0  # records dropped with an aborted transaction

    @property
    def in_transaction(self) -> bool:
        return self.pending is not None

    def replay(self, type_name: str, data: dict, offset: int = -1, timestamp: int = -1,
               where: str | None = None) -> None:
        """One record. ``where`` labels the configs it sets (default ``offset N``)."""
        if type_name == "BEGIN_TRANSACTION_RECORD":
            self.pending = []
        elif type_name == "END_TRANSACTION_RECORD":
            pending, self.pending = self.pending or [], None
            for record in pending:
                self._apply(*record)
        elif type_name == "ABORT_TRANSACTION_RECORD":
            self.aborted += len(self.pending or ())
            self.pending = None
        elif self.pending is not None:
            self.pending.append((type_name, data, offset, timestamp, where))
            return
        else:
            self._apply(type_name, data, offset, timestamp, where)
            return
        self._advance(offset, timestamp)

    def _advance(self, offset: int, timestamp: int) -> None:
        if offset >= 0:
            old = self.image.provenance
            self.image.provenance = Provenance(offset, timestamp, old.snapshot)

    def _apply(self, type_name: str, data: dict, offset: int, timestamp: int, where: str | None) -> None:
        handler = _HANDLERS.get(type_name)
        if handler is not None:
            handler(self, data, (offset, timestamp), where or f"offset {offset}")
        self._advance(offset, timestamp)

    # -- topics (TopicsDelta) --------------------------------------------------------------------

    def _topic(self, data, at, where):
        self.image.topics_by_id[data["topic_id"]] = TopicImage(data["name"], data["topic_id"])

    def _partition(self, data, at, where):
        topic = self.image.topics_by_id.get(data["topic_id"])
        if topic is None:
            return
        before = topic.partitions.get(data["partition_id"])
        after = topic.partitions[data["partition_id"]] = PartitionRegistration.from_record(data)
        self._tell_partition(at, topic, data["partition_id"], before, after, "PARTITION_RECORD")

    def _partition_change(self, data, at, where):
        topic = self.image.topics_by_id.get(data["topic_id"])
        before = None if topic is None else topic.partitions.get(data["partition_id"])
        if before is None:
            return  # Kafka: "Unable to apply PartitionChangeRecord ... no partition"
        after = topic.partitions[data["partition_id"]] = before.merge(data)
        self._tell_partition(at, topic, data["partition_id"], before, after, "PARTITION_CHANGE_RECORD")

    def _clear_elr(self, data, at, where):
        """``TopicsDelta.replay(ClearElrRecord)``: every partition of the topic (of every topic
        when no name is given) with an ELR or last known ELR gets both emptied, as by a
        PartitionChangeRecord (partition epoch + 1)."""
        name = data.get("topic_name")
        topics = [t for t in self.image.topics_by_id.values() if not name or t.name == name]
        for topic in topics:
            for partition, before in sorted(topic.partitions.items()):
                if before.elr or before.last_known_elr:
                    after = topic.partitions[partition] = before.merge(
                        {"eligible_leader_replicas": [], "last_known_elr": []})
                    self._tell_partition(at, topic, partition, before, after, "CLEAR_ELR_RECORD")

    def _remove_topic(self, data, at, where):
        topic = self.image.topics_by_id.pop(data["topic_id"], None)
        if topic is None:
            return
        self._drop_configs((TOPIC_RESOURCE, topic.name))  # ConfigurationsDelta.replay(RemoveTopicRecord)
        for partition, before in sorted(topic.partitions.items()):
            self._tell_partition(at, topic, partition, before, None, "REMOVE_TOPIC_RECORD")

    def _tell_partition(self, at, topic, partition, before, after, type_name):
        if self.observer is not None:
            self.observer.partition_changed(at[0], at[1], topic, partition, before, after, type_name)

    # -- cluster (ClusterDelta) ------------------------------------------------------------------

    def _register_broker(self, data, at, where):
        self._set_broker(at, data["broker_id"], BrokerRegistration.from_record(data), "REGISTER_BROKER_RECORD")

    def _unregister_broker(self, data, at, where):
        self._set_broker(at, data["broker_id"], None, "UNREGISTER_BROKER_RECORD")

    def _fence(self, data, at, where):
        self._change_broker(at, data["id"], "FENCE_BROKER_RECORD", fenced=True)

    def _unfence(self, data, at, where):
        self._change_broker(at, data["id"], "UNFENCE_BROKER_RECORD", fenced=False)

    def _broker_change(self, data, at, where):
        self._change_broker(at, data["broker_id"], "BROKER_REGISTRATION_CHANGE_RECORD",
                            fenced=FENCING_CHANGE.get(data.get("fenced", 0)),
                            in_controlled_shutdown=CONTROLLED_SHUTDOWN_CHANGE.get(data.get("in_controlled_shutdown", 0)),
                            directories=data.get("log_dirs") or None)

    def _change_broker(self, at, broker_id, type_name, **changes):
        before = self.image.brokers.get(broker_id)
        if before is not None:
            self._set_broker(at, broker_id, before.with_changes(**changes), type_name)

    def _set_broker(self, at, broker_id, after, type_name):
        before = self.image.brokers.get(broker_id)
        if after is None:
            self.image.brokers.pop(broker_id, None)
        else:
            self.image.brokers[broker_id] = after
        if self.observer is not None:
            self.observer.broker_changed(at[0], at[1], broker_id, before, after, type_name)

    def _register_controller(self, data, at, where):
        controller = ControllerRegistration.from_record(data)
        self.image.controllers[controller.id] = controller

    # -- features, configs, quotas, credentials, ACLs, tokens, producer ids ----------------------

    def _feature(self, data, at, where):
        if data["feature_level"] == 0 and data["name"] != "metadata.version":
            self.image.features.pop(data["name"], None)  # FeaturesDelta: level 0 removes it
        else:
            self.image.features[data["name"]] = data["feature_level"]

    def _config(self, data, at, where):
        resource = (data["resource_type"], data["resource_name"])
        values = self.image.configs.setdefault(resource, {})
        if data["value"] is None:
            values.pop(data["name"], None)
            self.image.config_origins.pop(resource + (data["name"],), None)
        else:
            values[data["name"]] = data["value"]
            self.image.config_origins[resource + (data["name"],)] = where
        if not values:
            del self.image.configs[resource]

    def _drop_configs(self, resource):
        for key in self.image.configs.pop(resource, {}):
            self.image.config_origins.pop(resource + (key,), None)

    def _client_quota(self, data, at, where):
        entity = tuple(sorted((e["entity_type"], e["entity_name"]) for e in data["entity"]))
        quotas = self.image.client_quotas.setdefault(entity, {})
        if data["remove"]:
            quotas.pop(data["key"], None)
        else:
            quotas[data["key"]] = data["value"]
        if not quotas:
            del self.image.client_quotas[entity]

    def _scram(self, data, at, where):
        """Only the user and the mechanism are kept: never the salt, keys or iterations."""
        mechanism = SCRAM_MECHANISMS.get(data["mechanism"], str(data["mechanism"]))
        self.image.scram.setdefault(data["name"], set()).add(mechanism)

    def _remove_scram(self, data, at, where):
        mechanisms = self.image.scram.get(data["name"], set())
        mechanisms.discard(SCRAM_MECHANISMS.get(data["mechanism"], str(data["mechanism"])))
        if not mechanisms:
            self.image.scram.pop(data["name"], None)

    def _acl(self, data, at, where):
        self.image.acls[data["id"]] = AclEntry(data["id"], data["resource_type"], data["resource_name"],
                                              data["pattern_type"], data["principal"], data["host"],
                                              data["operation"], data["permission_type"])

    def _remove_acl(self, data, at, where):
        self.image.acls.pop(data["id"], None)

    def _token(self, data, at, where):
        self.image.delegation_tokens.add(data["token_id"])

    def _remove_token(self, data, at, where):
        self.image.delegation_tokens.discard(data["token_id"])

    def _producer_ids(self, data, at, where):
        self.image.next_producer_id = data["next_producer_id"]


_HANDLERS = {
    "TOPIC_RECORD": MetadataDelta._topic,
    "PARTITION_RECORD": MetadataDelta._partition,
    "PARTITION_CHANGE_RECORD": MetadataDelta._partition_change,
    "CLEAR_ELR_RECORD": MetadataDelta._clear_elr,
    "REMOVE_TOPIC_RECORD": MetadataDelta._remove_topic,
    "REGISTER_BROKER_RECORD": MetadataDelta._register_broker,
    "UNREGISTER_BROKER_RECORD": MetadataDelta._unregister_broker,
    "FENCE_BROKER_RECORD": MetadataDelta._fence,
    "UNFENCE_BROKER_RECORD": MetadataDelta._unfence,
    "BROKER_REGISTRATION_CHANGE_RECORD": MetadataDelta._broker_change,
    "REGISTER_CONTROLLER_RECORD": MetadataDelta._register_controller,
    "FEATURE_LEVEL_RECORD": MetadataDelta._feature,
    "CONFIG_RECORD": MetadataDelta._config,
    "CLIENT_QUOTA_RECORD": MetadataDelta._client_quota,
    "USER_SCRAM_CREDENTIAL_RECORD": MetadataDelta._scram,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": MetadataDelta._remove_scram,
    "ACCESS_CONTROL_ENTRY_RECORD": MetadataDelta._acl,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": MetadataDelta._remove_acl,
    "DELEGATION_TOKEN_RECORD": MetadataDelta._token,
    "REMOVE_DELEGATION_TOKEN_RECORD": MetadataDelta._remove_token,
    "PRODUCER_IDS_RECORD": MetadataDelta._producer_ids,
}
REPLAYED_TYPES = frozenset(_HANDLERS) | frozenset(TRANSACTION_TYPES)
