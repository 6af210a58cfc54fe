#!/usr/bin/env bash
# 06-retention-not-deleting.sh: retention does not delete old segments: what blocks each one.
#
# Usage: 06-retention-not-deleting.sh [-h] [--json] [--config KEY=VALUE]... [--config-file FILE]
#                                     [--server-config FILE] [--metadata-log DIR]
#                                     [--now TIME] PARTITION_DIR|LOG_DIR...
#   (a log dir: its partitions, without Kafka's internal __ topics)
#
# When to use it: a topic's disk usage keeps growing although retention.ms / retention.bytes
#   should have removed its old segments. The topic's configs are read as the broker has them
#   (its __cluster_metadata-0, or --metadata-log, over --server-config), each printed with its
#   source; --config or --config-file go over them (kafka-configs.sh --describe gives the live
#   ones). A ZooKeeper-era log dir has no metadata log: Kafka's defaults are used then
#   (cleanup.policy=delete, retention.ms=7 days, no size limit) unless --config says otherwise.
# What it does: `seglog simulate-retention` walks the segments as the broker's retention does and
#   says, per partition, what stops the walk and, per segment, why it stays:
#     FUTURE_TIMESTAMP   a record's timestamp lies in the future: the segment waits until that
#                        time + retention.ms, and every later segment waits behind it
#     HIGH_WATERMARK     the segment holds offsets at or past the high watermark (followers
#                        behind, under-replicated partition, stale replication checkpoint)
#     COMPACT_ONLY       cleanup.policy has no "delete": retention never deletes segments
#     RETENTION_DISABLED retention.ms and retention.bytes are both -1
#     WITHIN_RETENTION   its largest timestamp is recent: deletable at the time printed (a
#                        single late or re-produced record keeps a whole segment)
#     WAITING_BEHIND     old enough itself, but an older segment ahead of it is kept
#     DUE                retention deletes it at the broker's next check
#                        (log.retention.check.interval.ms; files go after file.delete.delay.ms)
# What it changes: nothing.
# How to undo it: nothing to undo.
#
# Exit status (the same for every runbook, see README.md):
#   0  nothing blocked: every kept segment is within retention (the time it goes is printed)
#   1  action needed: a blocker was found (FUTURE_TIMESTAMP, HIGH_WATERMARK, COMPACT_ONLY,
#      RETENTION_DISABLED) or segments are DUE that the broker has not deleted
#   2  usage error
#   4  bad input: a path is missing or cannot be read
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init retention-not-deleting

config_args=()
now_args=()
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --config) [ $# -ge 2 ] || rb_usage_error "--config needs KEY=VALUE"; config_args+=(--config "$2"); shift ;;
        --config-file) [ $# -ge 2 ] || rb_usage_error "--config-file needs a file"; config_args+=(--config-file "$2"); shift ;;
        --server-config | --metadata-log) [ $# -ge 2 ] || rb_usage_error "$1 needs a path"
            config_args+=("$1" "$2"); shift ;;
        --now) [ $# -ge 2 ] || rb_usage_error "--now needs a time"; now_args=(--now "$2"); shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
rb_inputs "give the topic's partition dirs (or a log dir)" ${paths[@]+"${paths[@]}"}

rb_partitions "${paths[@]}"
if [ ${#RB_PARTITIONS[@]} -eq 0 ]; then
    rb_finish $RB_BAD_INPUT "no partition directory found in ${paths[*]} (Kafka's internal __ topics are left out of a log dir)"
fi
rb_seglog plan simulate-retention --format json ${config_args[@]+"${config_args[@]}"} \
    ${now_args[@]+"${now_args[@]}"} "${RB_PARTITIONS[@]}"
case "$RB_RC" in
    0 | 1) ;;
    3) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_HUMAN "seglog simulate-retention refused: see the line above" ;;
    *) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog simulate-retention could not read the input" ;;
esac
rb_py "$RB_TMP/plan.out" "$RB_TMP/details.json" >"$RB_TMP/why.txt" <<'PY'
import json, sys
from datetime import datetime, timezone
d = json.load(open(sys.argv[1]))

def when(ms):
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(ms)

BLOCKERS = {"FUTURE_TIMESTAMP", "HIGH_WATERMARK", "COMPACT_ONLY", "RETENTION_DISABLED"}
partitions, found = [], set()
for p in d["partitions"]:
    name = p["partition"].rstrip("/").rsplit("/", 1)[-1]
    now, rms = p["nowMs"], p["retentionMs"]
    walks = {w["rule"]: w for w in p["walks"]}
    ms, size = walks.get("retention.ms", {}), walks.get("retention.bytes", {})
    by_base = {s["baseOffset"]: s for s in p["segments"]}
    sources = {c["key"]: c["source"] for c in p.get("configs", [])}
    if "delete" not in p["cleanupPolicy"].split(","):
        source = f" ({sources['cleanup.policy']})" if "cleanup.policy" in sources else ""
        blocker, why = "COMPACT_ONLY", f"cleanup.policy={p['cleanupPolicy']}{source}: retention never deletes segments"
    elif ms.get("skipped") and size.get("skipped"):
        blocker, why = "RETENTION_DISABLED", f"{ms['skipped']}; {size['skipped']}"
    else:
        stop = ms.get("stopReason") or {}
        seg = by_base.get(ms.get("stoppedAt"))
        if seg is None and not ms.get("skipped") and p["deletedSegments"]:
            blocker, why = "DUE", "nothing blocks retention: every segment is due"
        elif stop.get("code") == "HIGH_WATERMARK":
            blocker, why = "HIGH_WATERMARK", f"segment {seg['baseOffset']} {stop['text']}"
        elif seg is not None and seg["largestTimestamp"] > now:
            blocker = "FUTURE_TIMESTAMP"
            why = (f"segment {seg['baseOffset']} has largest timestamp {when(seg['largestTimestamp'])}, in the future: "
                   f"kept until {when(seg['largestTimestamp'] + max(rms, 0))}")
        elif seg is not None and rms >= 0:
            blocker = "WITHIN_RETENTION"
            why = (f"segment {seg['baseOffset']} has largest timestamp {when(seg['largestTimestamp'])}: "
                   f"deletable after {when(seg['largestTimestamp'] + rms)}")
        else:
            blocker, why = "WITHIN_RETENTION", (stop.get("text") or ms.get("skipped") or "nothing to delete")
    rows, waiting = [], 0
    stopped = ms.get("stoppedAt")
    for s in p["segments"]:
        old = rms >= 0 and now - s["largestTimestamp"] > rms
        if s["action"] == "delete":
            code, text = "DUE", f"deleted by {s['deletedBy']['rule']}: {s['deletedBy']['text']}"
        elif blocker in ("COMPACT_ONLY", "RETENTION_DISABLED"):
            code, text = blocker, why
        elif s["baseOffset"] == stopped:
            code, text = blocker, why
        elif old and stopped is not None and s["baseOffset"] > stopped:
            waiting += 1
            code, text = "WAITING_BEHIND", f"older than retention.ms itself, but waits behind segment {stopped} ({blocker})"
        elif s["largestTimestamp"] > now:
            code, text = "FUTURE_TIMESTAMP", f"largest timestamp {when(s['largestTimestamp'])} is in the future"
        else:
            code = "WITHIN_RETENTION"
            text = (f"deletable after {when(s['largestTimestamp'] + rms)}" if rms >= 0 else "no time limit")
        rows.append({"baseOffset": s["baseOffset"], "file": s["file"], "bytes": s["size"],
                     "largestTimestamp": s["largestTimestamp"], "code": code, "why": text})
    due = len(p["deletedSegments"])
    if due:
        found.add("DUE")
    if blocker in BLOCKERS:
        found.add(blocker)
    print(f"{name}: {blocker}: {why}" + (f"; {due} segment(s) DUE now" if due else "")
          + (f"; {waiting} old segment(s) WAITING_BEHIND it" if waiting else ""))
    for c in p.get("configs", []):
        print(f"  config {c['key']}={c['value']} ({c['source']})")
    for note in p.get("configNotes", []):
        print(f"  note: {note}")
    print(f"  cleanup.policy={p['cleanupPolicy']} retention.ms={rms} retention.bytes={p['retentionBytes']}; "
          f"log start {p['logStartOffset']}, high watermark {p['highWatermark']} ({p['highWatermarkSource']}), "
          f"log end {p['logEndOffset']}")
    for r in rows:
        print(f"  {r['baseOffset']:>12} {r['bytes']:>11} B  {when(r['largestTimestamp'])}  {r['code']:<17} {r['why']}")
    partitions.append({"partition": name, "path": p["partition"], "blocker": blocker, "why": why,
                       "due": due, "waitingBehind": waiting, "segments": rows})
json.dump({"partitions": partitions, "found": sorted(found)}, open(sys.argv[2], "w"))
print("found: " + (", ".join(sorted(found)) if found else "nothing blocked"))
PY
rb_say_file "$RB_TMP/why.txt"
found=$(sed -n 's/^found: //p' "$RB_TMP/why.txt")
case "$found" in
    "nothing blocked") rb_finish $RB_OK "nothing blocked: every kept segment is within retention" ;;
esac
advice=""
case "$found" in *FUTURE_TIMESTAMP*) advice="$advice; FUTURE_TIMESTAMP: fix the producer's clock, then lower log.message.timestamp.after.max.ms or delete-records past the segment" ;; esac
case "$found" in *HIGH_WATERMARK*) advice="$advice; HIGH_WATERMARK: check under-replicated partitions and follower lag (offline: the replication-offset-checkpoint may just be stale)" ;; esac
case "$found" in *COMPACT_ONLY*) advice="$advice; COMPACT_ONLY: set cleanup.policy=compact,delete to add retention" ;; esac
case "$found" in *DUE*) advice="$advice; DUE: the broker deletes these at its next retention check; if it does not, check that the log dir is online and the broker's retention thread runs" ;; esac
rb_finish $RB_ACTION "retention is blocked or due: $found${advice}"
