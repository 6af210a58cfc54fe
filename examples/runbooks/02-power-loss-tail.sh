#!/usr/bin/env bash
# 02-power-loss-tail.sh: a torn or zero-filled segment tail after a power loss.
#
# Usage: 02-power-loss-tail.sh [-h] [--json] [--yes|--dry-run] [--mode salvage|kafka] [--backup-dir DIR]
#                              LOG_DIR|PARTITION_DIR...
#
# When to use it: after a power cut or a kernel crash, when pages the broker had written never
#   reached the disk: a segment ends in zeros or half a batch, or a run of zeros sits in the
#   middle of the active segment with valid batches after it.
# What it does: finds the damage with `seglog verify` (TORN_TAIL, ZERO_FILLED_TAIL,
#   TRAILING_GARBAGE, CORRUPT_REGION, BATCH_CRC_MISMATCH...), prints each place (file, byte
#   position, bytes) and, from the plans of `seglog recover`, the bytes and offsets lost by
#   Kafka's own recovery (--mode kafka: truncate at the first bad batch, drop every later
#   segment) and by salvage (--mode salvage: cut out only the damaged bytes, keep the valid
#   batches that lie beyond). It asks, then applies the chosen mode (default salvage).
# What it changes: only with your yes, the damaged segments (and their rebuilt indexes, producer
#   snapshots, checkpoints) as `seglog recover --mode MODE --apply` does; every removed byte is
#   kept in seglog-backups/ beside the log dir (or --backup-dir).
# How to undo it: the exact command is printed after the change:
#   seglog undo --apply <log dir>/../seglog-backups/<time>-recover-<pid>
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: no torn, zero-filled or damaged bytes
#   1  action taken (salvaged, undo printed) or needed (plan shown, not applied)
#   2  usage error
#   3  needs a human: seglog refused a partition, or (--mode kafka) the damage lies where
#      Kafka's recovery does not look (the log dir has a .kafka_cleanshutdown marker, or the
#      segment is below the recovery point): the broker will serve it as it is; --mode salvage
#      (the default) cuts it out (see also 03-crc-error.sh)
#   4  bad input: a path is missing or not readable Kafka data
#   5  a broker holds the log dir's .lock (it is running: stop it first)
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init power-loss-tail

mode=salvage
backup_args=()
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --mode) [ $# -ge 2 ] || rb_usage_error "--mode needs salvage or kafka"
            case "$2" in salvage | kafka) mode=$2 ;; *) rb_usage_error "--mode is salvage or kafka, not '$2'" ;; esac
            shift ;;
        --backup-dir) [ $# -ge 2 ] || rb_usage_error "--backup-dir needs a directory"
            backup_args=(--backup-dir "$2"); shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
rb_inputs "give the log dir (or partition dirs) of the stopped broker" ${paths[@]+"${paths[@]}"}

# 1. find the damage
rb_verify "${paths[@]}"
rb_py "$RB_TMP/verify.out" "$RB_TMP/damage.json" >"$RB_TMP/damage.txt" <<'PY'
import json, sys
LOG_DAMAGE = {"TORN_TAIL", "ZERO_FILLED_TAIL", "TRAILING_GARBAGE", "CORRUPT_REGION", "BATCH_CRC_MISMATCH",
              "BATCH_SIZE_TOO_SMALL", "BATCH_SIZE_MISMATCH", "UNKNOWN_MAGIC"}
import struct
d = json.load(open(sys.argv[1]))
found = []
for p in d["partitions"]:
    for f in p["findings"]:
        if f["code"] in LOG_DAMAGE:
            found.append(f)
            size = f"{f['length']} byte(s)" if f["length"] is not None else "?"
            print(f"{f['code']} {f['path']}: position {f['position']}, {size}, at offset {f['offset']} "
                  f"({f['severity']}): {f['message']}")
            if f["code"] == "TORN_TAIL" and (f["length"] or 0) >= 27:
                # the torn batch's own header: baseOffset (8 bytes) ... lastOffsetDelta at byte 23
                with open(f["path"], "rb") as log:
                    log.seek(f["position"])
                    head = log.read(27)
                base, delta = struct.unpack(">q", head[:8])[0], struct.unpack(">i", head[23:27])[0]
                if 0 <= delta < 1 << 31:
                    f["tornOffsets"] = [base, base + delta]
                    print(f"  the torn batch's header claims offsets {base}..{base + delta}: they were never "
                          f"completely written and are lost in every mode")
json.dump(found, open(sys.argv[2], "w"))
print(f"{len(found)} damaged place(s) in the .log files")
PY
rb_say_file "$RB_TMP/damage.txt"
if grep -q '^0 damaged' "$RB_TMP/damage.txt"; then
    rb_finish $RB_OK "healthy: no torn, zero-filled or damaged bytes"
fi

# 2. what each mode loses
for m in kafka salvage; do
    rb_seglog "plan-$m" recover --mode "$m" --format json "${paths[@]}"
    case "$RB_RC" in
        4) rb_say_file "$RB_TMP/plan-$m.err"; rb_finish $RB_BAD_INPUT "seglog recover could not read the input" ;;
        5) rb_say_file "$RB_TMP/plan-$m.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
        6) rb_say_file "$RB_TMP/plan-$m.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
    esac
    eval "plan_rc_$m=$RB_RC"
done
rb_py "$RB_TMP/plan-kafka.out" "$RB_TMP/plan-salvage.out" "$RB_TMP/damage.json" "$RB_TMP/details.json" \
    >"$RB_TMP/plans.txt" <<'PY'
import json, sys
details = {"damage": json.load(open(sys.argv[3])), "modes": {}}
for mode, path in (("kafka", sys.argv[1]), ("salvage", sys.argv[2])):
    d = json.load(open(path))
    lost = [{"partition": p["path"], "first": a, "last": b} for p in d["partitions"] for a, b in p["offsetsLost"]]
    count = sum(r["last"] - r["first"] + 1 for r in lost)
    ranges = ", ".join(f"{r['partition'].rstrip('/').rsplit('/', 1)[-1]} {r['first']}..{r['last']}" for r in lost)
    refused = [p["path"] for p in d["partitions"] if p.get("refused")]
    print(f"--mode {mode}: {d['summary']['bytesTruncated']} byte(s) removed, {count} offset(s) lost"
          + (f" ({ranges})" if ranges else "") + (f"; REFUSED {', '.join(refused)}" if refused else ""))
    details["modes"][mode] = {"bytesRemoved": d["summary"]["bytesTruncated"], "offsetsLost": lost,
                              "offsetCountLost": count, "steps": d["summary"]["steps"], "refused": refused}
k, s = details["modes"]["kafka"], details["modes"]["salvage"]
saved = k["offsetCountLost"] - s["offsetCountLost"]
details["offsetsSavedBySalvage"] = saved
if saved > 0:
    print(f"salvage keeps {saved} offset(s) beyond the damage that Kafka's recovery would drop")
else:
    print("salvage keeps nothing more than Kafka's recovery: nothing valid lies beyond the damage")
json.dump(details, open(sys.argv[4], "w"))
PY
rb_say_file "$RB_TMP/plans.txt"
chosen_rc=$(eval "echo \$plan_rc_$mode")
if [ "$chosen_rc" = 3 ]; then
    rb_finish $RB_HUMAN "seglog refused a partition in --mode $mode (see REFUSED above)"
fi
if [ "$chosen_rc" = 0 ]; then
    rb_finish $RB_HUMAN "damage found, but it lies where Kafka's recovery does not look (a .kafka_cleanshutdown marker, or below the recovery point): the broker would serve it as it is; --mode salvage cuts it out, see also 03-crc-error.sh"
fi

# 3. apply the chosen mode
rb_say "Another broker holds a replica of this partition? 10-replica-damaged.sh DAMAGED_DIR OTHER_REPLICA_DIR... repairs it from that copy byte for byte instead of losing these records."
if ! rb_ask "Apply --mode $mode now (seglog recover --mode $mode --apply)?"; then
    rb_say "Nothing changed. To apply it: $0 --mode $mode --yes ${paths[*]}"
    rb_finish $RB_ACTION "repair needed: plan shown, not applied"
fi
rb_seglog apply recover --mode "$mode" --apply --format json ${backup_args[@]+"${backup_args[@]}"} "${paths[@]}"
case "$RB_RC" in
    0) ;;
    5) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here (read-only file system, permission, disk full): see the line above" ;;
    *) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_HUMAN "seglog recover --apply stopped with exit $RB_RC" ;;
esac
rb_applied_from "$RB_TMP/apply.out"
rb_seglog after verify --format json "${paths[@]}"
rb_say "verify after the repair: exit $RB_RC (0 clean, 1 warnings only)"
rb_finish $RB_ACTION "repaired with --mode $mode; start the broker (undo: $RB_UNDO)"
