#!/usr/bin/env bash
# 01-broker-wont-start.sh: a broker will not start, or starts slowly, after a crash.
#
# Usage: 01-broker-wont-start.sh [-h] [--json] [--yes|--dry-run] [--backup-dir DIR] LOG_DIR|PARTITION_DIR...
#
# When to use it: the broker died (kill -9, power cut, OOM) and now fails while loading its logs,
#   or spends minutes in "Recovering unflushed segment" at start-up. Run it with the broker
#   STOPPED, on the log dir(s) of log.dirs.
# What it does: `seglog verify` the paths, then shows the plan of `seglog recover --mode kafka`:
#   exactly what the broker's own start-up recovery would do (truncations, removed segments,
#   rebuilt indexes, offsets lost) and how much it must re-read (the slow part). It asks before
#   carrying the plan out (--yes: without asking; --dry-run: never); then it prints what the
#   broker will now skip: the segments it no longer re-reads at start-up, the offsets it no
#   longer serves, and the recovery left for its start.
# What it changes: only with your yes, what `seglog recover --mode kafka --apply` changes (the
#   same files the broker would change); every removed byte is kept in seglog-backups/ beside
#   the log dir (or --backup-dir).
# How to undo it: the exact command is printed after the change:
#   seglog undo --apply <log dir>/../seglog-backups/<time>-recover-<pid>
# When the plan loses offsets after a mid-log CRC error, 02-power-loss-tail.sh (salvage mode)
#   keeps the valid batches beyond the damage instead.
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: the broker's start-up recovery has nothing to change (or only removes leftover
#      .deleted/.cleaned files, as it does after every clean stop)
#   1  action taken (recovery applied, undo printed) or needed (plan shown, not applied)
#   2  usage error
#   3  needs a human: seglog refused a partition Kafka would not load as recovery does, or
#      verify found damage that start-up recovery does not repair (see 03-crc-error.sh)
#   4  bad input: a path is missing or not readable Kafka data
#   5  a broker holds the log dir's .lock (it is running: stop it first)
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init broker-wont-start

backup_args=()
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --backup-dir) [ $# -ge 2 ] || rb_usage_error "--backup-dir needs a directory"
            backup_args=(--backup-dir "$2"); shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
rb_inputs "give the log dir (or partition dirs) of the stopped broker" ${paths[@]+"${paths[@]}"}

# 1. what is wrong
rb_verify "${paths[@]}"
verify_rc=$RB_RC
rb_py "$RB_TMP/verify.out" >"$RB_TMP/verify.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
codes = {}
for f in d["findings"] + [f for p in d["partitions"] for f in p["findings"]]:
    if f["severity"] != "info":
        codes[f["code"]] = codes.get(f["code"], 0) + 1
listed = ", ".join(f"{c} x{n}" for c, n in sorted(codes.items()))
print(f"verify: {s['partitions']} partition(s), {s['segments']} segment(s): {s['errors']} error(s), "
      f"{s['warnings']} warning(s)" + (": " + listed if listed else ""))
PY
rb_say_file "$RB_TMP/verify.txt"

# 2. what the broker's start-up recovery would do
rb_seglog plan recover --mode kafka --format json "${paths[@]}"
plan_rc=$RB_RC
case "$plan_rc" in
    4) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog recover could not read the input" ;;
    5) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
esac
rb_py "$RB_TMP/plan.out" "$RB_TMP/plan.json" "$verify_rc" "$RB_TMP/details.json" >"$RB_TMP/plan.txt" <<'PY'
import json, sys
# every number below is the plan's (seglog recover --format json), none recomputed here
d = json.load(open(sys.argv[1]))
s = d["summary"]
lost, reread_segments, reread_bytes = [], s["recoveredSegments"], s["recoveredBytes"]
for p in d["partitions"]:
    name = p["path"].rstrip("/").rsplit("/", 1)[-1]
    reread = len(p["recoveredSegments"])
    if p.get("refused"):
        print(f"{name}: REFUSED: {p['refused']}")
        continue
    if not p["steps"] and not reread:
        continue
    clean = "clean shutdown" if p["cleanShutdown"] else "unclean shutdown"
    print(f"{name}: {clean}, recovery point {p['recoveryPoint']}, log [{p['logStartOffset']}, "
          f"{p['logEndOffset']}); start-up re-reads {reread} segment(s), {p['recoveredBytes']} bytes")
    for step in p["steps"]:
        print(f"  {step['op']} {step['path'].rsplit('/', 1)[-1]}: {step['why']}")
    for first, last in p["offsetsLost"]:
        print(f"  LOST offsets {first}..{last} ({last - first + 1} offset(s))")
        lost.append({"partition": name, "first": first, "last": last})
    if p["flushedOffsetsLost"]:
        first, last = p["flushedOffsetsLost"]
        print(f"  LOST offsets {first}..{last}: below the recovery point, so once flushed, but no longer in the log "
              f"(other replicas may hold them: let this broker rejoin as a follower)")
        lost.append({"partition": name, "first": first, "last": last})
print(f"plan: {s['steps']} step(s) in {s['partitions']} partition(s), {s['bytesTruncated']} byte(s) truncated, "
      f"{len(lost)} offset range(s) lost, {s['refused']} refused; {reread_segments} segment(s), "
      f"{reread_bytes} bytes re-read at start-up")
if reread_segments and not all(p["cleanShutdown"] for p in d["partitions"]):
    print("(no .kafka_cleanshutdown: the broker recovers every segment from the recovery point on, "
          "num.recovery.threads.per.data.dir at a time: that is the slow part of a start after a crash)")
steps = [st for p in d["partitions"] for st in p["steps"]]
leftovers = [st for st in steps if st["op"] == "remove" and st["path"].endswith((".deleted", ".cleaned"))]
checkpoints = [st for st in d["logDirSteps"] if st["path"].endswith("-checkpoint")]
routine = (bool(steps) and len(leftovers) == len(steps) and len(checkpoints) == len(d["logDirSteps"])
           and not lost and not s["bytesTruncated"])
if routine:
    print(f"only routine work: {len(leftovers)} leftover .deleted/.cleaned file(s) removed and "
          f"{len(checkpoints)} checkpoint file(s) rewritten, as the broker does at every start")
plan = {"steps": s["steps"], "routineOnly": routine, "bytesTruncated": s["bytesTruncated"], "offsetsLost": lost, "refused": s["refused"],
        "segmentsReread": reread_segments, "bytesReread": reread_bytes, "partitionsWithSteps": [p["path"] for p in d["partitions"] if p["steps"]]}
json.dump(plan, open(sys.argv[2], "w"))
json.dump({"verifyStatus": int(sys.argv[3]), "plan": plan}, open(sys.argv[4], "w"))
PY
rb_say_file "$RB_TMP/plan.txt"

if [ "$plan_rc" = 3 ]; then
    rb_finish $RB_HUMAN "seglog refused a partition that Kafka would not load as recovery does (see REFUSED above)"
fi
if [ "$plan_rc" = 1 ] && grep -q '^only routine work' "$RB_TMP/plan.txt"; then
    if [ "$verify_rc" = 3 ]; then
        rb_finish $RB_HUMAN "start-up recovery only tidies up, but verify found damage it does not repair: run 03-crc-error.sh"
    fi
    rb_finish $RB_OK "healthy: the broker's start-up only tidies up (nothing to recover, nothing lost)"
fi
if [ "$plan_rc" = 0 ]; then
    if [ "$verify_rc" = 3 ]; then
        rb_finish $RB_HUMAN "start-up recovery changes nothing, but verify found damage it does not repair: run 03-crc-error.sh"
    fi
    rb_finish $RB_OK "healthy: the broker's start-up recovery has nothing to change"
fi

# 3. a plan: ask, apply, show what the broker will now skip
if ! rb_ask "Apply this plan now (seglog recover --mode kafka --apply)?"; then
    rb_say "Nothing changed. To apply it: $0 --yes ${paths[*]}"
    rb_finish $RB_ACTION "recovery needed: plan shown, not applied"
fi
rb_seglog apply recover --mode kafka --apply --format json ${backup_args[@]+"${backup_args[@]}"} "${paths[@]}"
apply_rc=$RB_RC
case "$apply_rc" in
    0 | 3) ;;
    5) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
    *) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_BAD_INPUT "seglog recover --apply failed (exit $apply_rc)" ;;
esac
rb_applied_from "$RB_TMP/apply.out"
rb_seglog replan recover --mode kafka --format json "${paths[@]}"
rb_py "$RB_TMP/plan.json" "$RB_TMP/replan.out" >"$RB_TMP/skip.txt" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for r in plan["offsetsLost"]:
    print(f"The broker will now skip {r['partition']} offsets {r['first']}..{r['last']}: they are gone from the log")
if not plan["offsetsLost"]:
    print("The broker will now skip no offset: every valid batch was kept")
print(f"The broker will now skip {plan['bytesTruncated']} damaged or torn byte(s): removed (kept in the backup)")
d = json.load(open(sys.argv[2]))
segments = d["summary"]["recoveredSegments"]
steps = d["summary"]["steps"]
skipped = plan["segmentsReread"] - segments
if skipped > 0:
    print(f"The broker will now skip re-reading {skipped} of the {plan['segmentsReread']} segment(s) its start-up "
          f"would have recovered (the recovery point moved past them)")
print(f"At its next start the broker re-reads {segments} segment(s) and finds "
      + ("nothing to change" if steps == 0 else f"{steps} step(s) still to do"))
PY
rb_say_file "$RB_TMP/skip.txt"
if [ "$apply_rc" = 3 ]; then
    rb_finish $RB_HUMAN "applied to the partitions seglog could recover; a refused partition needs a human"
fi
rb_finish $RB_ACTION "recovery applied; start the broker (undo: $RB_UNDO)"
