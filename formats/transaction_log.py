"""The record schemas of ``__transaction_state`` (Kafka's transaction coordinator).

::

    key     int16 record type (0 = TransactionLog), then string transactionalId (key version 0)
    value   int16 value version (0, or 1 = flexible), then:
              int64  producerId
              int64  previousProducerId     tagged (tag 0, v1+), default -1
              int64  nextProducerId         tagged (tag 1, v1+), default -1
              int16  producerEpoch
              int32  transactionTimeoutMs
              int8   transactionStatus      0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
                                            4 CompleteCommit, 5 CompleteAbort, 6 Dead,
                                            7 PrepareEpochFence
              []     transactionPartitions  nullable: string topic, []int32 partitionIds
              int64  transactionLastUpdateTimestampMs
              int64  transactionStartTimestampMs
              int16  clientTransactionVersion tagged (tag 2, v1+), default 0
            a null value is a tombstone (the transactional id expired)

From ``transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json``.
"""

from __future__ import annotations

from seglog_cli.formats.kafka_message import ArrayOf, Field as F, Message

TRANSACTION_LOG_KEY = Message("TransactionLogKey", (F("transactionalId", "string"),), valid="0")

TRANSACTION_LOG_VALUE = Message("TransactionLogValue", (
    F("producerId", "int64"),
    F("previousProducerId", "int64", versions="1+", tag=0, default=-1),
    F("nextProducerId", "int64", versions="1+", tag=1, default=-1),
    F("producerEpoch", "int16"),
    F("transactionTimeoutMs", "int32"),
    F("transactionStatus", "int8"),
    F("transactionPartitions", ArrayOf((F("topic", "string"), F("partitionIds", "[]int32"))), nullable="0+"),
    F("transactionLastUpdateTimestampMs", "int64"),
    F("transactionStartTimestampMs", "int64"),
    F("clientTransactionVersion", "int16", versions="1+", tag=2, default=0),
), valid="0-1", flexible="1+")

RECORD_TYPES = {0: (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)}

TRANSACTION_STATES = {
    0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
    5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence",
}
