#!/usr/bin/env bash
# 07-hanging-transaction.sh: a hanging transaction holds a partition's last stable offset back.
#
# Usage: 07-hanging-transaction.sh [-h] [--json] [--topic TOPIC] [--now TIME] [--timeout-ms MS]
#                                  [--bootstrap-server HOST:PORT] LOG_DIR
#
# When to use it: read_committed consumers stop making progress on a partition while producers
#   still write (consumer lag grows, the last stable offset does not move), or
#   kafka-transactions.sh find-hanging reports something, or you want to know before a broker
#   comes back which transactions it will find open. Works on a stopped broker's log dir or a
#   copy of it.
# What it does: `seglog transactions` replays the transaction markers of every data partition
#   (and the coordinator's state from __transaction_state) and lists each open transaction:
#   partition, producer id, epoch, first offset, age, HANGING when older than its timeout or
#   unknown to the coordinator. For each partition it prints the last stable offset the open
#   transactions pin, and the kafka-transactions.sh commands that confirm and abort a hanging
#   one on the running cluster. --now sets the clock for ages (epoch ms or ISO-8601);
#   --timeout-ms is the timeout of transactions the coordinator does not know (default 900000).
# What it changes: nothing. The abort command is printed, not run.
# How to undo it: nothing to undo. (An abort run on the cluster writes an ABORT marker: final.)
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: no hanging transaction (open ones still within their timeout are listed)
#   1  action needed: a hanging transaction (abort commands printed), a .txnindex that does not
#      match the ABORT markers, or records seglog could not decode
#   2  usage error
#   3  needs a human: a partition is damaged (read up to the damage: run 03-crc-error.sh)
#   4  bad input: not a log dir, or unreadable
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init hanging-transaction

args=()
bootstrap=localhost:9092
log_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --topic) [ $# -ge 2 ] || rb_usage_error "--topic needs a topic"; args+=(--topic "$2"); shift ;;
        --now) [ $# -ge 2 ] || rb_usage_error "--now needs a time"; args+=(--now "$2"); shift ;;
        --timeout-ms) [ $# -ge 2 ] || rb_usage_error "--timeout-ms needs a number"; args+=(--timeout-ms "$2"); shift ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) [ -z "$log_dir" ] || rb_usage_error "give one log dir"; log_dir=$1 ;;
    esac
    shift
done
rb_inputs "give the broker's log dir" ${log_dir:+"$log_dir"}

rb_seglog txns transactions --format json ${args[@]+"${args[@]}"} "$log_dir"
txn_rc=$RB_RC
if [ "$txn_rc" = 4 ]; then
    rb_say_file "$RB_TMP/txns.err"
    rb_finish $RB_BAD_INPUT "seglog transactions could not read $log_dir"
fi
rb_py "$RB_TMP/txns.out" "$RB_TMP/details.json" "$bootstrap" >"$RB_TMP/txns.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bootstrap = sys.argv[3]
c = d["counts"]
open_txns = [t for t in d["transactions"] if t["state"] == "open"]
print(f"{c['committed']} committed, {c['aborted']} aborted, {c['open']} open ({c['hanging']} hanging) transaction(s) "
      f"in {d['partitionsRead']} partition(s)")
pinned = {}
for t in sorted(open_txns, key=lambda t: (t["partition"], t["firstOffset"])):
    age = f"{t['ageMs'] / 60000:.1f} min" if t["ageMs"] is not None else "age unknown"
    flag = "HANGING" if t["hanging"] else "open"
    print(f"{flag} {t['partition']}: producer id {t['producerId']}, epoch {t['producerEpoch']}, first offset "
          f"{t['firstOffset']}, last offset {t['lastOffset']}, {t['records']} record(s), {age}, "
          f"transactional id {t['transactionalId'] or '(unknown)'}")
    pinned.setdefault(t["partition"], t["firstOffset"])
commands = []
for t in open_txns:
    if not t["hanging"]:
        continue
    topic, _, partition = t["partition"].rpartition("-")
    commands.append(f"kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {topic} "
                    f"--partition {partition} --start-offset {t['firstOffset']}")
for partition, offset in pinned.items():
    print(f"{partition}: last stable offset pinned at {offset}: read_committed consumers stop there")
if commands:
    topics = sorted({t["partition"].rpartition("-")[0] for t in open_txns if t["hanging"]})
    for topic in topics:
        print(f"confirm on the cluster: kafka-transactions.sh --bootstrap-server {bootstrap} find-hanging --topic {topic}")
    for command in commands:
        print(f"abort: {command}")
def line(item):
    if isinstance(item, dict) and "message" in item:
        where = " ".join(f"{k} {item[k]}" for k in ("path", "partition", "position", "offset") if item.get(k) is not None)
        return f"{where}: {item['message']}"
    return json.dumps(item)
for m in d["txnIndexMismatches"]:
    print(f"TXNINDEX mismatch: {line(m)}")
for p in d["problems"]:
    print(f"problem: {line(p)}")
for u in d["unreadable"]:
    print(f"unreadable: {line(u)}")
json.dump({"open": open_txns, "counts": c, "lastStableOffsets": pinned, "abortCommands": commands,
           "txnIndexMismatches": d["txnIndexMismatches"], "problems": d["problems"]}, open(sys.argv[2], "w"))
PY
rb_say_file "$RB_TMP/txns.txt"
case "$txn_rc" in
    0) rb_finish $RB_OK "healthy: no hanging transaction" ;;
    3) rb_finish $RB_HUMAN "a partition is damaged (read up to the damage): run 03-crc-error.sh on it" ;;
esac
if grep -q '^abort: ' "$RB_TMP/txns.txt"; then
    rb_finish $RB_ACTION "hanging transaction(s): confirm with find-hanging, then abort with the commands above"
fi
rb_finish $RB_ACTION "a .txnindex mismatch or undecodable records: see the lines above"
