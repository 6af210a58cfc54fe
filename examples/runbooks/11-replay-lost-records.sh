#!/usr/bin/env bash
# 11-replay-lost-records.sh: put back the records an unclean leader election threw away.
#
# Usage: 11-replay-lost-records.sh [-h] [--json] [--yes|--dry-run] --bootstrap-server HOST:PORT
#                                  [--leader DIR] [--topic-map OLD:NEW] [--producer-config FILE]
#                                  [--work-dir DIR] REPLICA_PARTITION_DIR REPLICA_PARTITION_DIR...
#
# When to use it: an unclean leader election (unclean.leader.election.enable=true, or
#   kafka-leader-elections.sh --election-type unclean) made a stale replica the leader. Every
#   record the old leader alone held (acknowledged with acks=1, or with acks=all once the ISR had
#   shrunk to it) is truncated away when that broker rejoins. While its partition dir is intact
#   (the broker not restarted yet, or a copy taken before), the records are still on its disk.
#   Give the replicas' partition dirs (or copies of them): the new leader's and the old one's.
# What it does: `seglog diff --export-lost` compares the replicas (the reference is the new
#   leader's: the highest leader epoch, or --leader) and writes the records each other replica
#   would lose to WORK_DIR/lost.jsonl, lossless (base64, each record naming its encoding). Then
#   `seglog replay` plans sending exactly those records to the partition in the live cluster
#   (--bootstrap-server: the producer finds the partition's current leader), with their keys,
#   values, headers and timestamps, after the records the partition now holds: the destination
#   is checked first (the topic exists, the partition is there, CreateTime timestamps). It shows
#   the plan, asks, and sends them exactly once (idempotent producer, progress in
#   WORK_DIR/replay-progress.json). Killed half-way or failed: run it again with the same
#   arguments; it resumes with no duplicate and no gap. The consumer groups of the old leader's
#   __consumer_offsets are not carried over (they were committed against the lost offsets).
# What it changes: only with your yes, the live cluster: the lost records are appended to the
#   partition, at new offsets after its current end (printed). Nothing on disk is changed;
#   WORK_DIR (default: ./seglog-replay-lost) keeps the export and the progress file.
# How to undo it: Kafka cannot take single records back. The offsets the records were given are
#   printed; consumers that must not read them again can be moved past them with
#   kafka-consumer-groups.sh --reset-offsets --to-offset, and kafka-delete-records.sh removes them
#   only together with everything before them.
#
# Exit status (the same for every runbook, see README.md):
#   0  nothing was lost: the replicas agree, or the others only lag behind the leader
#   1  action taken (records replayed; offsets printed) or needed (plan shown, not applied)
#   2  usage error
#   3  needs a human: replay refused (the destination fails a check, or someone else wrote to
#      the partition since an interrupted run), the cluster cannot be reached or refused
#   4  bad input: a path is missing or not a partition directory
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init replay-lost-records

bootstrap=""
work_dir=./seglog-replay-lost
diff_args=()
replay_args=()
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        --leader) [ $# -ge 2 ] || rb_usage_error "--leader needs a partition dir"; diff_args=(--leader "$2"); shift ;;
        --topic-map) [ $# -ge 2 ] || rb_usage_error "--topic-map needs OLD:NEW"; replay_args+=(--topic-map "$2"); shift ;;
        --producer-config) [ $# -ge 2 ] || rb_usage_error "--producer-config needs a file"
            replay_args+=(--producer-config "$2"); shift ;;
        --work-dir) [ $# -ge 2 ] || rb_usage_error "--work-dir needs a directory"; work_dir=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
[ -n "$bootstrap" ] || rb_usage_error "give the live cluster with --bootstrap-server HOST:PORT"
rb_inputs "give the replicas' partition dirs (the new leader's and the old leader's)" ${paths[@]+"${paths[@]}"}
[ ${#paths[@]} -ge 2 ] || rb_usage_error "give at least two replicas of the partition"
mkdir -p -- "$work_dir"
lost="$work_dir/lost.jsonl"
progress="$work_dir/replay-progress.json"

# 1. the replicas compared; the records a truncation would lose, exported losslessly
rb_diff ${diff_args[@]+"${diff_args[@]}"} --export-lost "$lost" "${paths[@]}"
rb_py "$RB_TMP/diff.out" >"$RB_TMP/diff.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
total = 0
for p in d["partitions"]:
    ref = p["reference"]
    print(f"{p['partition']}: reference (the leader's log) {ref['path']}, offsets {ref['logStartOffset']}.."
          f"{ref['logEndOffset'] - 1}")
    for r in p["replicas"]:
        line = f"  {r['path']}: {r['status']}"
        if r["divergence"]:
            line += f"; diverges at offset {r['divergence']['offset']} ({r['divergence']['cause']})"
        if r["lost"]:
            total += r["lost"]["records"]
            line += f"; {r['lost']['records']} record(s) only it holds would be lost"
        print(line)
print(f"LOST {total}")
PY
total=$(sed -n 's/^LOST //p' "$RB_TMP/diff.txt")
sed '/^LOST /d' "$RB_TMP/diff.txt" >"$RB_TMP/diff-human.txt"
rb_say_file "$RB_TMP/diff-human.txt"
if [ "$total" = 0 ]; then
    rb_finish $RB_OK "nothing was lost: no replica holds records the leader's log does not"
fi
rb_say "$total record(s) exported losslessly to $lost"

# 2. the replay, planned against the live cluster
replay() {
    # shellcheck disable=SC2086
    rb_seglog "$1" replay --format json --no-progress --bootstrap-server "$bootstrap" --progress-file "$progress" \
        ${replay_args[@]+"${replay_args[@]}"} "${@:2}" "$lost"
}
replay plan
case "$RB_RC" in
    0 | 1 | 3) ;;
    4) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog replay could not read the export" ;;
    7) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_HUMAN "the cluster at $bootstrap cannot be reached or refused" ;;
    *) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_INTERNAL "seglog replay stopped with exit $RB_RC" ;;
esac
plan_rc=$RB_RC
rb_py "$RB_TMP/plan.out" >"$RB_TMP/plan.txt" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]
for p in plan["partitions"]:
    done = f" ({p['alreadyDelivered']} already delivered by an earlier run)" if p["alreadyDelivered"] else ""
    print(f"Replay {p['records']} record(s) of {p['topic']}-{p['partition']} (offsets {p['firstOffset']}.."
          f"{p['lastOffset']}) into {p['destinationTopic']}-{p['partition']}{done}")
for t in plan["topics"]:
    if t["exists"]:
        print(f"  {t['topic']}: {t['partitions']} partition(s), message.timestamp.type={t['timestampType']}")
for refusal in plan["refusals"]:
    print(f"REFUSED: {refusal}")
PY
rb_say_file "$RB_TMP/plan.txt"
cp -- "$RB_TMP/plan.out" "$RB_TMP/details.json"
if [ "$plan_rc" = 3 ]; then
    rb_finish $RB_HUMAN "seglog replay refused: see the line above (nothing sent)"
fi

if ! rb_ask "Send these $total record(s) to $bootstrap now (seglog replay --apply)?"; then
    rb_finish $RB_ACTION "replay needed: plan shown, nothing sent"
fi
replay apply --apply
rb_replay_applied apply ""
cp -- "$RB_TMP/apply.out" "$RB_TMP/details.json"
rb_finish $RB_ACTION "replayed $total lost record(s) into $bootstrap exactly once (progress: $progress)"
