#!/usr/bin/env bash
# 04-rebuild-index.sh: a corrupt or missing .index / .timeindex / .txnindex, rebuilt offline.
#
# Usage: 04-rebuild-index.sh [-h] [--json] [--yes|--dry-run] [--config KEY=VALUE]... [--backup-dir DIR]
#                            LOG_DIR|PARTITION_DIR|SEGMENT...
#
# When to use it: the broker logs "Corrupt index found", "Found a corrupted index file",
#   an index sanity check failure, or a slow start because index files are missing; or someone
#   is about to `rm *.index` (never do that: this runbook keeps the originals).
# What it does: `seglog verify` lists the index findings (an active segment's preallocated,
#   zero-filled index is normal and left alone); for the segments it flags, `seglog
#   rebuild-index` plans which index files are missing or differ from what Kafka's recovery
#   writes; on your yes (--yes) it writes them, then plans again (nothing left). Pass the topic's index.interval.bytes and
#   segment.index.bytes with --config when they are not Kafka's defaults.
# What it changes: only with your yes, the planned index files (temp file, fsync, rename); the
#   originals go to seglog-backups/ beside the log dir (or --backup-dir). No .log is touched.
# How to undo it: the exact command is printed after the change:
#   seglog undo --apply <log dir>/../seglog-backups/<time>-rebuild-index-<pid>
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: verify finds no index problem (or the flagged files already are what Kafka's
#      recovery writes)
#   1  action taken (indexes rebuilt, undo printed) or needed (plan shown, not applied)
#   2  usage error
#   3  needs a human: a segment's .log is damaged or torn, so no index is written (run
#      02-power-loss-tail.sh or 01-broker-wont-start.sh first)
#   4  bad input: a path is missing or not readable Kafka data
#   5  a broker holds the log dir's .lock (it is running: stop it first)
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init rebuild-index

config_args=()
backup_args=()
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --config) [ $# -ge 2 ] || rb_usage_error "--config needs KEY=VALUE"; config_args+=(--config "$2"); shift ;;
        --backup-dir) [ $# -ge 2 ] || rb_usage_error "--backup-dir needs a directory"; backup_args=(--backup-dir "$2"); shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
rb_inputs "give the log dir, partition dirs or segment files" ${paths[@]+"${paths[@]}"}

# 1. what verify says about the indexes
rb_verify "${paths[@]}"
rb_py "$RB_TMP/verify.out" "$RB_TMP/segments.txt" >"$RB_TMP/verify.txt" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
n, segments, orphans = 0, [], []
for p in d["partitions"]:
    for f in p["findings"]:
        if f["severity"] == "info" or not ("INDEX" in f["code"] or f["code"].startswith("TIME_INDEX")):
            continue
        n += 1
        if n <= 20:
            print(f"{f['code']} {f['path']}: {f['message']}")
        log = os.path.splitext(f["path"])[0] + ".log"
        if f["code"] == "ORPHAN_INDEX" or not os.path.isfile(log):
            orphans.append(f["path"])
        elif log not in segments:
            segments.append(log)
damaged_logs = sorted({f["path"] for p in d["partitions"] for f in p["findings"]
                       if f["severity"] == "error" and f["path"].endswith(".log")})
print(f"verify: {n} index finding(s) above info in {len(segments)} segment(s)")
for log in damaged_logs:
    print(f"DAMAGED .log {log}: no index can be rebuilt over it before its recovery")
if orphans:
    print(f"{len(orphans)} index file(s) without their .log: Kafka deletes them at start-up (01-broker-wont-start.sh shows it)")
with open(sys.argv[2], "w") as f:
    f.write("".join(s + "\n" for s in segments))
PY
rb_say_file "$RB_TMP/verify.txt"
if [ ! -s "$RB_TMP/segments.txt" ]; then
    if grep -q '^DAMAGED ' "$RB_TMP/verify.txt"; then
        rb_finish $RB_HUMAN "a segment's .log is damaged: run 02-power-loss-tail.sh or 01-broker-wont-start.sh first"
    fi
    rb_finish $RB_OK "healthy: no index finding above info (an active segment's preallocated index is normal)"
fi
segments=()
while IFS= read -r line; do segments+=("$line"); done <"$RB_TMP/segments.txt"

# 2. the rebuild plan
rb_seglog plan rebuild-index --format json ${config_args[@]+"${config_args[@]}"} "${segments[@]}"
plan_rc=$RB_RC
case "$plan_rc" in
    4) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog rebuild-index could not read the input" ;;
    5) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
esac
rb_py "$RB_TMP/plan.out" "$RB_TMP/details.json" >"$RB_TMP/plan.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
writes, refused = [], []
for seg in d["segments"]:
    if seg["refused"]:
        refused.append({"log": seg["log"], "why": seg["refused"]})
        print(f"REFUSED {seg['log']}: {seg['refused']}")
    for f in seg["files"]:
        if f["action"] not in ("identical", "keep"):
            writes.append({"path": f["path"], "action": f["action"], "detail": f["detail"]})
            print(f"{f['action']} {f['path']}: {f['detail']}")
print(f"plan: {len(writes)} index file(s) to write, {len(refused)} segment(s) refused, "
      f"{d['summary']['segments']} segment(s) checked")
json.dump({"plan": {"write": writes, "refused": refused}}, open(sys.argv[2], "w"))
PY
rb_say_file "$RB_TMP/plan.txt"
if [ "$plan_rc" = 3 ]; then
    rb_finish $RB_HUMAN "a segment's .log is damaged: run 02-power-loss-tail.sh or 01-broker-wont-start.sh first"
fi
if [ "$plan_rc" = 0 ]; then
    rb_finish $RB_OK "healthy: every index file is what Kafka's recovery writes"
fi

# 3. write them, originals kept
if ! rb_ask "Rebuild these index files now (seglog rebuild-index --apply)?"; then
    rb_say "Nothing changed. To apply it: $0 --yes ${paths[*]}"
    rb_finish $RB_ACTION "index rebuild needed: plan shown, not applied"
fi
rb_seglog apply rebuild-index --apply --format json ${config_args[@]+"${config_args[@]}"} \
    ${backup_args[@]+"${backup_args[@]}"} "${segments[@]}"
case "$RB_RC" in
    0) ;;
    5) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
    *) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_HUMAN "seglog rebuild-index --apply stopped with exit $RB_RC" ;;
esac
rb_applied_from "$RB_TMP/apply.out"
rb_seglog after rebuild-index --format json ${config_args[@]+"${config_args[@]}"} "${segments[@]}"
rb_say "rebuild-index plan after the change: exit $RB_RC (0: nothing left to write)"
rb_finish $RB_ACTION "index files rebuilt (undo: $RB_UNDO)"
