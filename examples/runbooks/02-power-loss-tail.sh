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
#   TRAILING_GARBAGE, CORRUPT_REGION, BATCH_CRC_MISMATCH...), then prints, as the plans of
#   `seglog recover --format json` give them: each damaged place (file, byte position, bytes,
#   the offsets it held, or that they cannot be named), and per mode, per partition and in
#   total the bytes removed, the offsets lost and the records kept beyond the damage, by
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
rb_py "$RB_TMP/verify.out" "$RB_TMP/damage.json" <<'PY'
import json, sys
LOG_DAMAGE = {"TORN_TAIL", "ZERO_FILLED_TAIL", "TRAILING_GARBAGE", "CORRUPT_REGION", "BATCH_CRC_MISMATCH",
              "BATCH_SIZE_TOO_SMALL", "BATCH_SIZE_MISMATCH", "UNKNOWN_MAGIC"}
d = json.load(open(sys.argv[1]))
found = [f for p in d["partitions"] for f in p["findings"] if f["code"] in LOG_DAMAGE]
json.dump(found, open(sys.argv[2], "w"))
PY
if [ "$(cat "$RB_TMP/damage.json")" = "[]" ]; then
    rb_say "verify: no torn, zero-filled or damaged bytes in the .log files"
    rb_finish $RB_OK "healthy: no torn, zero-filled or damaged bytes"
fi

# 2. where the damage is and what each mode loses: every number below is read from the plans of
#    `seglog recover --mode kafka|salvage --format json` (the plan --yes applies), none recomputed here
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
import json, os, sys
findings = json.load(open(sys.argv[3]))
for f in findings:  # verify names files as given, the plans absolute
    f["path"] = os.path.realpath(f["path"])
plans = {"kafka": json.load(open(sys.argv[1])), "salvage": json.load(open(sys.argv[2]))}


def name(path):
    return path.rstrip("/").rsplit("/", 1)[-1]


def offsets(r):
    """A damaged range's offsets in words, from the plan (never a placeholder)."""
    if r["offsets"] == "known":
        return f"offsets {r['firstOffset']}..{r['lastOffset']} ({r['offsetCount']} offset(s))"
    if r["offsets"] == "none":
        return "no offsets"
    if r["firstOffset"] is not None:
        return f"offsets from {r['firstOffset']} on that cannot be named (no batch header can be read there)"
    return "offsets that cannot be named (no batch header can be read there)"


def codes(r):
    """verify's codes for the findings inside the range (names only: the numbers are the plan's)."""
    inside = []
    for f in findings:
        if f["path"] == os.path.realpath(r["path"]) and r["position"] <= f["position"] < r["position"] + r["bytes"] \
                and f["code"] not in inside:
            inside.append(f["code"])
    return inside


def whole(segments, size):
    return f", {segments} later segment(s) ({size} byte(s)) deleted whole" if segments else ""


def kept(k):
    if not k["batches"]:
        return "nothing kept beyond the damage"
    return (f"{k['records']} record(s) in {k['batches']} batch(es) kept beyond the damage, offsets "
            f"{k['firstOffset']}..{k['lastOffset']}")


# the damaged places: the ranges salvage cuts out (the damage alone)
salvage = plans["salvage"]
covered = set()
print("Damage (the byte ranges seglog recover --mode salvage cuts out):")
for p in salvage["partitions"]:
    for r in p["damagedRanges"]:
        inside = codes(r)
        covered.update((f["path"], f["position"]) for f in findings if f["code"] in inside
                       and f["path"] == os.path.realpath(r["path"])
                       and r["position"] <= f["position"] < r["position"] + r["bytes"])
        print(f"  {' '.join(inside) or 'DAMAGE'} {name(p['path'])}/{name(r['path'])}: position {r['position']}, "
              f"{r['bytes']} byte(s), {offsets(r)}" + (f": {r['why']}" if r["offsets"] != "unknown" else ""))
for f in findings:
    if (f["path"], f["position"]) not in covered:
        print(f"  {f['code']} {f['path']}: {f['message']} (not in the salvage plan: see its notes or REFUSED below)")
s = salvage["summary"]
print(f"{s['damagedRanges']} damaged range(s), {s['damagedBytes']} byte(s), in the .log files")

details = {"damage": [dict(r, partition=name(p["path"]), codes=codes(r))
                      for p in salvage["partitions"] for r in p["damagedRanges"]],
           "verifyFindings": findings, "modes": {}}
for mode in ("kafka", "salvage"):
    d = plans[mode]
    s = d["summary"]
    lost = [{"partition": name(p["path"]), "first": a, "last": b} for p in d["partitions"] for a, b in p["offsetsLost"]]
    unknown = [r for p in d["partitions"] for r in p["damagedRanges"] if r["offsets"] == "unknown"]
    ranges = ", ".join(f"{r['partition']} {r['first']}..{r['last']}" for r in lost)
    refused = [p["path"] for p in d["partitions"] if p.get("refused")]
    print(f"--mode {mode}: {s['bytesTruncated']} byte(s) removed{whole(s['removedSegments'], s['removedSegmentBytes'])}, "
          f"{s['offsetCountLost']} offset(s) lost"
          + (f" ({ranges})" if ranges else "")
          + (f" and the offsets of {len(unknown)} range(s) that cannot be named" if unknown else "")
          + f"; {s['keptBeyondDamage']['records']} record(s) in {s['keptBeyondDamage']['batches']} batch(es) kept "
            "beyond the damage"
          + (f"; REFUSED {', '.join(refused)}" if refused else ""))
    for p in d["partitions"]:
        if p.get("refused"):
            print(f"  {name(p['path'])}: REFUSED: {p['refused']}")
            continue
        if not p["damagedRanges"] and not p["offsetsLost"] and not p["removedSegments"]:
            continue
        mine = ", ".join(f"{a}..{b}" for a, b in p["offsetsLost"])
        print(f"  {name(p['path'])}: {p['bytesTruncated']} byte(s) removed"
              f"{whole(len(p['removedSegments']), p['removedSegmentBytes'])}, {p['offsetCountLost']} offset(s) lost"
              + (f" ({mine})" if mine else "") + f", {kept(p['keptBeyondDamage'])}")
        for r in p["damagedRanges"]:
            print(f"    {name(r['path'])} position {r['position']}: {r['bytes']} byte(s), {offsets(r)}")
        if p["flushedOffsetsLost"]:
            a, b = p["flushedOffsetsLost"]
            print(f"    and offsets {a}..{b}, below the recovery point (so flushed once), are no longer in the log")
    details["modes"][mode] = {"bytesRemoved": s["bytesTruncated"], "offsetsLost": lost,
                              "segmentsDeleted": s["removedSegments"], "segmentBytesDeleted": s["removedSegmentBytes"],
                              "offsetCountLost": s["offsetCountLost"], "keptBeyondDamage": s["keptBeyondDamage"],
                              "damagedRanges": s["damagedRanges"], "steps": s["steps"], "refused": refused,
                              "partitions": [{"partition": name(p["path"]), "bytesRemoved": p["bytesTruncated"],
                                              "offsetCountLost": p["offsetCountLost"],
                                              "keptBeyondDamage": p["keptBeyondDamage"],
                                              "damagedRanges": p["damagedRanges"]} for p in d["partitions"]]}
beyond = salvage["summary"]["keptBeyondDamage"]
details["keptBeyondDamageBySalvage"] = beyond
if beyond["batches"]:
    # does Kafka's recovery look at the damage (its plan cuts there too) in the partitions where salvage keeps more?
    looks = {p["path"]: bool(p["damagedRanges"]) for p in plans["kafka"]["partitions"]}
    keeping = [p["path"] for p in salvage["partitions"] if p["keptBeyondDamage"]["batches"]]
    if all(looks.get(path) for path in keeping):
        kafka = "--mode kafka truncates at the damage and drops them"
    elif not any(looks.get(path) for path in keeping):
        kafka = "--mode kafka does not look at this damage: the broker would serve them, and the damaged bytes too"
    else:
        kafka = "--mode kafka drops them where its recovery looks and serves the damage elsewhere"
    print(f"salvage keeps {beyond['records']} record(s) in {beyond['batches']} batch(es) that lie beyond the damage "
          f"({kafka})")
else:
    print("salvage keeps nothing beyond the damage: no valid batch lies after it")
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
