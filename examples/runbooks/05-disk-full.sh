#!/usr/bin/env bash
# 05-disk-full.sh: a log dir's disk is full: what a proposed retention would free, and in which order.
#
# Usage: 05-disk-full.sh [-h] [--json] --config retention.ms=MS|retention.bytes=BYTES [--config ...]
#                        [--topic TOPIC]... [--need SIZE] [--now TIME] [--bootstrap-server HOST:PORT]
#                        [--server-config FILE] [--metadata-log DIR] LOG_DIR|PARTITION_DIR...
#
# When to use it: a broker's disk is (nearly) full and you want to lower retention.ms or
#   retention.bytes, but first need to know which partitions and segments that would delete,
#   how many bytes come back and in which order, before changing the topic config. Never free
#   space by deleting segment files by hand: the broker's offsets, indexes and checkpoints
#   would no longer agree.
# What it does: `seglog simulate-retention` with the proposed topic config over each topic's own
#   configs (as the broker has them: its __cluster_metadata-0, or --metadata-log, over
#   --server-config) on every partition given (a log dir: every partition in it except Kafka's
#   internal __ topics; --topic: only those topics), then lists the segments retention deletes, oldest largest timestamp first,
#   with the running total, the bytes per partition, the disk's free space now and after, and
#   the kafka-configs.sh command that applies the proposal. --need SIZE (bytes, or with a K,
#   M, G, T suffix) says whether that is enough. --now sets the clock (epoch ms or ISO-8601).
#   A topic whose cleanup.policy is compact only is never deleted by retention (Kafka does not):
#   it is named with where its policy comes from, and no command is proposed for it.
# What it changes: nothing. (seglog simulate-retention --apply could delete offline, but its
#   quarantine lies on the same disk and frees nothing: apply the config to the running topic.)
# How to undo it: nothing to undo.
#
# Exit status (the same for every runbook, see README.md):
#   0  nothing needed: the disk already has --need bytes free
#   1  action needed: the proposal frees space (and at least --need): apply the printed command
#   2  usage error
#   3  needs a human: the proposal frees nothing, or less than --need
#   4  bad input: a path is missing, holds no partition, or cannot be read
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init disk-full

config_args=()
configs=()
topics=()
need=""
now_args=()
bootstrap=localhost:9092
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --config) [ $# -ge 2 ] || rb_usage_error "--config needs KEY=VALUE"
            config_args+=(--config "$2"); configs+=("$2"); shift ;;
        --topic) [ $# -ge 2 ] || rb_usage_error "--topic needs a topic name"; topics+=("$2"); shift ;;
        --need) [ $# -ge 2 ] || rb_usage_error "--need needs a size"; need=$2; shift ;;
        --now) [ $# -ge 2 ] || rb_usage_error "--now needs a time"; now_args=(--now "$2"); shift ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        --server-config | --metadata-log) [ $# -ge 2 ] || rb_usage_error "$1 needs a path"
            config_args+=("$1" "$2"); shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
[ ${#paths[@]} -gt 0 ] || rb_usage_error "give the log dir (or partition dirs) on the full disk"
need_bytes=0
if [ -n "$need" ]; then
    case "$need" in
        *[0-9]) mult=1; num=$need ;;
        *[kK]) mult=1024; num=${need%?} ;;
        *[mM]) mult=1048576; num=${need%?} ;;
        *[gG]) mult=1073741824; num=${need%?} ;;
        *[tT]) mult=1099511627776; num=${need%?} ;;
        *) rb_usage_error "--need takes bytes or a size with K, M, G or T, not '$need'" ;;
    esac
    case "$num" in '' | *[!0-9]*) rb_usage_error "--need takes bytes or a size with K, M, G or T, not '$need'" ;; esac
    need_bytes=$((num * mult))
fi
rb_inputs "give the log dir (or partition dirs) on the full disk" ${paths[@]+"${paths[@]}"}

# the partitions: given partition dirs as they are; a log dir's partitions but the internal ones
rb_partitions "${paths[@]}"
partitions=(${RB_PARTITIONS[@]+"${RB_PARTITIONS[@]}"})
if [ ${#topics[@]} -gt 0 ]; then
    kept=()
    for dir in ${partitions[@]+"${partitions[@]}"}; do
        name=${dir##*/}
        for t in "${topics[@]}"; do
            if [ "${name%-*}" = "$t" ]; then kept+=("$dir"); fi
        done
    done
    partitions=(${kept[@]+"${kept[@]}"})
fi
if [ ${#partitions[@]} -eq 0 ]; then
    rb_finish $RB_BAD_INPUT "no partition directory found in ${paths[*]}${topics[*]:+ for topic(s) ${topics[*]}} (Kafka's internal __ topics are left out of a log dir)"
fi
if [ ${#configs[@]} -eq 0 ]; then
    rb_say "no --config: each topic's own configs are simulated (from the cluster metadata; Kafka's defaults without it)"
fi

rb_seglog plan simulate-retention --format json ${config_args[@]+"${config_args[@]}"} \
    ${now_args[@]+"${now_args[@]}"} "${partitions[@]}"
case "$RB_RC" in
    0 | 1) ;;
    3) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_HUMAN "seglog simulate-retention refused: see the line above" ;;
    5) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_LOCKED "the log dir is locked" ;;
    6) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
    *) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog simulate-retention could not read the input" ;;
esac
free_kb=$(df -Pk -- "${paths[0]}" 2>/dev/null | awk 'NR == 2 {print $4}') || free_kb=""
rb_py "$RB_TMP/plan.out" "$RB_TMP/details.json" "${free_kb:-}" "$need_bytes" "$bootstrap" \
    ${configs[@]+"${configs[@]}"} >"$RB_TMP/plan.txt" <<'PY'
import json, sys
from datetime import datetime, timezone
d = json.load(open(sys.argv[1]))
free = int(sys.argv[3]) * 1024 if sys.argv[3] else None
need, bootstrap, configs = int(sys.argv[4]), sys.argv[5], sys.argv[6:]

def size(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024

segments, per_partition, compact_only = [], [], []
for p in d["partitions"]:
    name = p["partition"].rstrip("/").rsplit("/", 1)[-1]
    if "delete" not in p["cleanupPolicy"].split(","):
        given = next((c for c in p.get("configs", []) if c["key"] == "cleanup.policy"), None)
        compact_only.append(f"{name}: cleanup.policy={p['cleanupPolicy']}"
                            + (f" ({given['source']})" if given else "")
                            + ": Kafka never deletes its segments by retention; left out")
    for note in p.get("configNotes", []):
        print(f"{name}: note: {note}")
    freed = p["reclaimedBytes"]
    per_partition.append({"partition": name, "path": p["partition"], "bytes": freed, "size": p["size"],
                          "segments": len(p["deletedSegments"]), "newLogStartOffset": p["newLogStartOffset"]})
    for s in p["segments"]:
        if s["action"] == "delete":
            segments.append({"partition": name, "file": s["file"], "baseOffset": s["baseOffset"],
                             "lastOffset": s["nextOffset"] - 1, "bytes": s["size"],
                             "largestTimestamp": s["largestTimestamp"], "rule": s["deletedBy"]["rule"]})
segments.sort(key=lambda s: (s["largestTimestamp"], s["partition"], s["baseOffset"]))
total = 0
for line in compact_only:
    print(line)
print("segments retention deletes, oldest first (largest timestamp, running total):")
for s in segments:
    total += s["bytes"]
    s["cumulativeBytes"] = total
    ts = datetime.fromtimestamp(s["largestTimestamp"] / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"  {s['partition']:<24} {s['file']}  offsets {s['baseOffset']}..{s['lastOffset']}  {size(s['bytes']):>10}  "
          f"{ts}  {s['rule']:<15}  total {size(total)}")
if not segments:
    print("  (none)")
per_partition.sort(key=lambda p: -p["bytes"])
print("per partition (most freed first):")
for p in per_partition:
    print(f"  {p['partition']:<24} {size(p['bytes']):>10} of {size(p['size'])}, {p['segments']} segment(s)"
          + (f", new log start offset {p['newLogStartOffset']}" if p["bytes"] else ""))
print(f"retention would free {size(total)} ({total} bytes) in {len(segments)} segment(s) of "
      f"{sum(1 for p in per_partition if p['bytes'])} partition(s)")
if free is not None:
    print(f"disk free now {size(free)}, after {size(free + total)}")
retention = [c for c in configs if c.split("=", 1)[0] in ("retention.ms", "retention.bytes")]
commands = []
# only topics the proposal frees bytes from (a compact-only topic never does)
for topic in sorted({p["partition"].rsplit("-", 1)[0] for p in per_partition if p["bytes"]}):
    if retention:
        commands.append(f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type topics "
                        f"--entity-name {topic} --add-config {','.join(retention)}")
for c in commands:
    print(f"apply: {c}")
if need:
    enough = (free or 0) + total >= need
    print(f"--need {size(need)}: " + ("enough" if enough else "NOT enough") + " with this proposal")
json.dump({"segments": segments, "partitions": per_partition, "freedBytes": total, "diskFreeBytes": free,
           "needBytes": need or None, "commands": commands, "compactOnly": compact_only}, open(sys.argv[2], "w"))
PY
rb_say_file "$RB_TMP/plan.txt"
read -r freed free_now < <(rb_py "$RB_TMP/details.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["freedBytes"], d["diskFreeBytes"] if d["diskFreeBytes"] is not None else -1)
PY
)
if [ "$need_bytes" -gt 0 ] && [ "$free_now" -ge "$need_bytes" ]; then
    rb_finish $RB_OK "the disk already has the $need free: no retention change needed"
fi
if [ "$freed" = 0 ]; then
    rb_finish $RB_HUMAN "this retention frees nothing: propose a lower retention.ms/retention.bytes or add disk"
fi
if [ "$need_bytes" -gt 0 ] && [ $((free_now + freed)) -lt "$need_bytes" ]; then
    rb_finish $RB_HUMAN "this retention frees $freed bytes, less than the $need needed"
fi
rb_finish $RB_ACTION "this retention frees $freed bytes: apply it with the kafka-configs.sh command above"
