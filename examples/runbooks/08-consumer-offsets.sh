#!/usr/bin/env bash
# 08-consumer-offsets.sh: the committed offsets of consumer groups while the cluster is down.
#
# Usage: 08-consumer-offsets.sh [-h] [--json] [--group GROUP] [--topic TOPIC] [--out FILE.csv]
#                               [--bootstrap-server HOST:PORT] LOG_DIR
#
# When to use it: the cluster (or the broker leading __consumer_offsets) is down and you need to
#   know where each consumer group was: to restart consumers on a rebuilt cluster at the same
#   place, to measure what a group had not read yet (its lag), or to keep the offsets before
#   wiping disks.
#   Run it on every broker's log dir (each holds the __consumer_offsets partitions it led or
#   followed; the freshest copy wins).
# What it does: `seglog offsets` replays the log dir's __consumer_offsets partitions as the group
#   coordinator does (latest commit per key, tombstones, transactional commits only with their
#   COMMIT marker) and prints group, topic, partition, offset, the partition's end (high
#   watermark, else log end offset) and the lag when the partition is in this log dir, leader
#   epoch and commit time, groups whose committed offset is out of range (retention deleted
#   records below it, or it is beyond the log end: auto.offset.reset will decide where the
#   group resumes), commits still waiting for a marker, and for each group/topic the kafka-consumer-groups.sh
#   --reset-offsets commands that put the same offsets on a running cluster. --out writes them
#   as CSV too (a new file, never overwritten).
# What it changes: nothing in the log dir; --out writes one new file.
# How to undo it: nothing to undo in the log dir; remove the --out file if you do not want it.
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: offsets read cleanly
#   1  action needed: a committed offset out of range (below the log start or beyond the log
#      end offset), commits pending a transaction marker, records seglog could not decode, or
#      no committed offset at all in this log dir (try the other brokers' log dirs)
#   2  usage error
#   3  needs a human: a __consumer_offsets partition is damaged (offsets read up to the damage)
#   4  bad input: no __consumer_offsets partition, unreadable, no offset for the --group/--topic
#      given, or --out exists
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init consumer-offsets

args=()
out=""
bootstrap=localhost:9092
log_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --group) [ $# -ge 2 ] || rb_usage_error "--group needs a group"; args+=(--group "$2"); shift ;;
        --topic) [ $# -ge 2 ] || rb_usage_error "--topic needs a topic"; args+=(--topic "$2"); shift ;;
        --out) [ $# -ge 2 ] || rb_usage_error "--out needs a file"; out=$2; shift ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) [ -z "$log_dir" ] || rb_usage_error "give one log dir"; log_dir=$1 ;;
    esac
    shift
done
rb_inputs "give the broker's log dir" ${log_dir:+"$log_dir"}
if [ -n "$out" ] && [ -e "$out" ]; then
    rb_finish $RB_BAD_INPUT "--out $out exists: choose a new file name (nothing is overwritten)"
fi

rb_seglog offsets offsets --format json ${args[@]+"${args[@]}"} "$log_dir"
offsets_rc=$RB_RC
if [ "$offsets_rc" = 4 ]; then
    rb_say_file "$RB_TMP/offsets.err"
    rb_finish $RB_BAD_INPUT "no readable __consumer_offsets partition in $log_dir"
fi
rb_py "$RB_TMP/offsets.out" "$RB_TMP/details.json" "$bootstrap" "$out" >"$RB_TMP/offsets.txt" <<'PY'
import csv, json, sys
from datetime import datetime, timezone
d = json.load(open(sys.argv[1]))
bootstrap, out = sys.argv[3], sys.argv[4]

def when(ms):
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if ms is not None else "-"

rows = sorted(d["committed"], key=lambda r: (r["group"], r["topic"], r["partition"]))

def end(r):  # what the lag is measured against, as kafka-consumer-groups' LOG-END-OFFSET
    value = r["highWatermark"] if r["highWatermark"] is not None else r["logEndOffset"]
    return "-" if value is None else value

print(f"{'GROUP':<24} {'TOPIC':<24} {'PARTITION':>9} {'OFFSET':>12} {'END':>12} {'LAG':>8} {'EPOCH':>6}  "
      "COMMITTED-AT")
for r in rows:
    lag = "-" if r["lag"] is None else r["lag"]
    print(f"{r['group']:<24} {r['topic']:<24} {r['partition']:>9} {r['offset']:>12} {end(r):>12} {lag:>8} "
          f"{r['leaderEpoch']:>6}  {when(r['commitTimestamp'])}")
for r in rows:
    for code, why in zip(r["flags"], r["notes"]):
        print(f"OUT OF RANGE ({code}): {r['group']} {r['topic']}-{r['partition']}: {why}")
absent = sorted({f"{r['topic']}-{r['partition']}" for r in rows if r["logEndOffset"] is None})
if absent:
    print(f"no lag for partitions not in this log dir (run on the broker that hosts them): {' '.join(absent)}")
for r in d["pending"]:
    print(f"PENDING (no COMMIT/ABORT marker yet): {r['group']} {r['topic']}-{r['partition']} offset {r['offset']}")
groups = sorted({r["group"] for r in rows})
print(f"{len(rows)} committed offset(s) of {len(groups)} group(s), {len(d['pending'])} pending; "
      f"{d['recordsRead']} record(s) in {d['partitionsRead']} __consumer_offsets partition(s)")
commands = []
by_group_topic = {}
for r in rows:
    by_group_topic.setdefault((r["group"], r["topic"]), []).append(r)
for (group, topic), items in by_group_topic.items():
    for r in items:   # one offset per partition: --to-offset takes one value per command
        commands.append(f"kafka-consumer-groups.sh --bootstrap-server {bootstrap} --group {group} "
                        f"--topic {topic}:{r['partition']} --reset-offsets --to-offset {r['offset']} --execute")
for c in commands:
    print(f"restore: {c}")
for p in d["problems"]:
    print(f"problem: {json.dumps(p)}")
for u in d["unreadable"]:
    print(f"unreadable: {json.dumps(u)}")
if out:
    with open(out, "x", newline="") as f:
        w = csv.writer(f)
        keys = ["group", "topic", "partition", "offset", "leaderEpoch", "metadata", "commitTimestamp"]
        w.writerow(keys)   # the headers are seglog offsets' JSON keys (and its --format csv headers)
        for r in rows:
            w.writerow([r[k] for k in keys])
    print(f"written to {out}")
json.dump({"committed": rows, "pending": d["pending"], "groups": groups, "flaggedGroups": d["flaggedGroups"],
           "restoreCommands": commands,
           "problems": d["problems"], "outFile": out or None}, open(sys.argv[2], "w"))
open(sys.argv[2] + ".count", "w").write(str(len(rows)))
PY
rb_say_file "$RB_TMP/offsets.txt"
count=$(cat "$RB_TMP/details.json.count")
if [ -n "$out" ] && [ -f "$out" ]; then
    printf -v RB_UNDO 'rm -- %q' "$out"
    rb_say "UNDO (the file this runbook wrote): $RB_UNDO"
fi
case "$offsets_rc" in
    3) rb_finish $RB_HUMAN "a __consumer_offsets partition is damaged: offsets read up to the damage (run 03-crc-error.sh)" ;;
    1) rb_finish $RB_ACTION "offsets read, but a group's committed offset is out of range (OUT OF RANGE above), some commits are pending a marker or records could not be decoded" ;;
esac
if [ "$count" = 0 ] && [ ${#args[@]} -gt 0 ]; then
    rb_finish $RB_BAD_INPUT "no committed offset found for ${args[*]} (groups present: see seglog offsets $log_dir)"
fi
if [ "$count" = 0 ]; then
    rb_finish $RB_ACTION "no committed offset in this log dir: run it on the other brokers' log dirs (each holds the __consumer_offsets partitions it led or followed)"
fi
rb_finish $RB_OK "offsets read cleanly: $count committed offset(s)"
