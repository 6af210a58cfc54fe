#!/usr/bin/env bash
# 10-replica-damaged.sh: one replica of a partition is damaged and other brokers hold copies.
#
# Usage: 10-replica-damaged.sh [-h] [--json] [--yes|--dry-run] [--backup-dir DIR]
#                              DAMAGED_PARTITION_DIR OTHER_REPLICA_PARTITION_DIR...
#
# When to use it: a CRC error, a zeroed range or a torn tail on one broker's copy of a partition
#   (found by 01-broker-wont-start.sh, 02-power-loss-tail.sh, 03-crc-error.sh or seglog verify)
#   while other brokers hold replicas of it: copies of their partition dirs, or the dirs
#   themselves while those brokers are stopped. Kafka's own recovery would truncate at the first
#   bad batch and drop every later segment; salvage would cut the bad batches out. Both lose
#   records another replica still holds byte for byte.
# What it does: `seglog diff` compares the replicas (the first divergent offset and why, the
#   offset Kafka truncates each one to when it rejoins, lost records); then, among the other
#   replicas that `seglog verify` finds clean, the first one `seglog repair --from` accepts
#   (same topic id, same leader epochs and positions in the damaged range) is chosen, with
#   --tail when the damaged replica also lacks its end. It shows the plan, asks, applies.
#   Damage that no replica can repair is left alone: salvage only that (the command is printed).
#   Where the damaged replica diverges from another (an unclean leader election), repair says at
#   which offset and why, and the seglog diff --export-lost and seglog replay commands that keep
#   what it alone holds: damage below that offset is still repaired, and the run ends with 3.
# What it changes: only with your yes, the damaged replica's damaged segments (HEALTHY's bytes
#   for exactly the damaged offsets; indexes rebuilt), as `seglog repair --apply` does; every
#   replaced byte is kept in seglog-backups/ beside its log dir (or --backup-dir). The other
#   replicas are only read.
# How to undo it: the exact command is printed after the change:
#   seglog undo --apply <log dir>/../seglog-backups/<time>-repair-<pid>
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: the replica has no damage and lacks nothing another replica holds
#   1  action taken (repaired, undo printed) or needed (plan shown, not applied)
#   2  usage error
#   3  needs a human: no replica can repair the damage (they diverge there, are damaged too or
#      belong to another topic), or damage remains after the repair: salvage is printed; or the
#      replica diverges from the one it was (or could be) repaired from: what it alone holds is
#      lost when it rejoins unless exported and replayed (the commands are printed)
#   4  bad input: a path is missing or not a partition directory
#   5  a broker holds the damaged replica's log dir .lock (it is running: stop it first)
#   6  seglog cannot write here
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init replica-damaged

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
rb_inputs "give the damaged replica's partition dir, then the other replicas' partition dirs" ${paths[@]+"${paths[@]}"}
[ ${#paths[@]} -ge 2 ] || rb_usage_error "give at least one other replica after the damaged one"
damaged=${paths[0]}
others=("${paths[@]:1}")

# 1. the replicas compared
rb_diff "${paths[@]}"
rb_py "$RB_TMP/diff.out" >"$RB_TMP/diff.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["partitions"]:
    ref = p["reference"]
    print(f"{p['partition']}: {p['status']}; reference {ref['path']} (offsets {ref['logStartOffset']}.."
          f"{ref['logEndOffset'] - 1})")
    for r in p["replicas"]:
        line = f"  {r['path']}: {r['status']}, offsets {r['logStartOffset']}..{r['logEndOffset'] - 1}"
        if r["divergence"]:
            line += f"; diverges at {r['divergence']['offset']} ({r['divergence']['cause']})"
        if r["truncation"] and r["truncation"]["offset"] < r["logEndOffset"]:
            line += f"; Kafka truncates it to {r['truncation']['offset']} when it rejoins"
        if r["lost"]:
            line += f"; {r['lost']['records']} records lost"
        if r["damage"]:
            line += f"; {len(r['damage'])} damaged place(s)"
        print(line)
PY
rb_say_file "$RB_TMP/diff.txt"

# 2. the damaged replica's own state
rb_seglog verify-damaged verify --format json "$damaged"
case "$RB_RC" in
    0 | 1) damaged_clean=1 ;;
    3) damaged_clean=0 ;;
    4) rb_say_file "$RB_TMP/verify-damaged.err"; rb_finish $RB_BAD_INPUT "seglog verify could not read $damaged" ;;
    *) rb_finish $RB_INTERNAL "seglog verify stopped with exit $RB_RC" ;;
esac

divergence_of() {
    # the divergence a repair --format json document states (its statement, then the commands)
    rb_py "$1" <<'PY'
import json, sys
try:
    divergence = json.load(open(sys.argv[1]))["plan"]["divergence"]
except (ValueError, KeyError, TypeError):
    divergence = None
if divergence:
    print(divergence["message"])
    commands = divergence["commands"]
    print(f"  compare them: {commands['diff']}")
    if commands["exportLost"]:
        print(f"  export what it alone holds: {commands['exportLost']}")
        print(f"  put it back into the cluster: {commands['replay']}")
PY
}

plan_empty() {
    rb_py "$1" <<'PY'
import json, sys
print("yes" if json.load(open(sys.argv[1]))["empty"] else "no")
PY
}

# 3. the first clean replica that can repair it (with --tail when it also lacks its end)
healthy=""
tail_args=()
diverges=""  # the last divergence repair stated (what the replica alone holds, and how to keep it)
n=0
for other in "${others[@]}"; do
    n=$((n + 1))
    rb_seglog "verify-$n" verify --format json "$other"
    if [ "$RB_RC" != 0 ] && [ "$RB_RC" != 1 ]; then
        rb_say "$other: not a clean replica (seglog verify exit $RB_RC): not used"
        continue
    fi
    divergence=""
    for tail in --tail ""; do
        rb_seglog "plan-$n" repair --format json ${tail:+"$tail"} --from "$other" "$damaged"
        case "$RB_RC" in
            0 | 1) healthy=$other; tail_args=(${tail:+"$tail"}); break ;;
            3) refusal=$(head -n 1 "$RB_TMP/plan-$n.err")
               # no refusal but a divergence (JSON on stdout): damage below it is still repaired
               divergence=$(divergence_of "$RB_TMP/plan-$n.out")
               if [ -n "$divergence" ]; then
                   diverges=$divergence
                   refusal="the replicas diverge (below)"
                   if [ "$(plan_empty "$RB_TMP/plan-$n.out")" = no ]; then
                       healthy=$other; tail_args=(${tail:+"$tail"}); break
                   fi
               fi ;;
            4) rb_say_file "$RB_TMP/plan-$n.err"; rb_finish $RB_BAD_INPUT "seglog repair could not read the input" ;;
            *) rb_finish $RB_INTERNAL "seglog repair stopped with exit $RB_RC" ;;
        esac
    done
    if [ -n "$healthy" ]; then break; fi
    rb_say "$other: cannot repair it: ${refusal:-refused}"
    if [ -n "$divergence" ]; then rb_say "$divergence"; fi
done

salvage() {
    printf -v cmd 'seglog recover --mode salvage %q' "$damaged"
    rb_say "Damage no replica holds intact: salvage only that, after a look at the plan: $cmd (then --apply)"
}

if [ -z "$healthy" ]; then
    if [ "$damaged_clean" = 1 ] && [ -n "$diverges" ]; then
        rb_finish $RB_HUMAN "no damage on $damaged, but it diverges from the other replicas: keep what it alone holds (the commands above) before it rejoins"
    fi
    if [ "$damaged_clean" = 1 ]; then
        rb_finish $RB_OK "healthy: no damage on $damaged (other replicas may differ: see the comparison above)"
    fi
    salvage
    rb_finish $RB_HUMAN "no replica can repair $damaged"
fi
plan_json="$RB_TMP/plan-$n.out"
empty=$(plan_empty "$plan_json")
if [ "$empty" = yes ]; then
    if [ "$damaged_clean" = 1 ]; then
        rb_finish $RB_OK "healthy: $damaged has no damage and lacks nothing $healthy holds"
    fi
    salvage
    rb_finish $RB_HUMAN "$damaged is damaged where $healthy holds nothing to copy"
fi
rb_py "$plan_json" >"$RB_TMP/plan.txt" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]
print(f"Repair {plan['damaged']} from {plan['healthy']}:")
for s in plan["segments"]:
    offsets = ", ".join(f"{a}..{b}" for a, b in s["offsets"]) or "none (a cut)"
    print(f"  {'create' if s['new'] else 'rewrite'} {s['path']} ({s['size']} bytes): offsets {offsets} from the "
          "healthy replica; .index and .timeindex rebuilt")
for snapshot in plan["snapshots"]:
    print(f"  copy producer snapshot {snapshot}")
PY
rb_say_file "$RB_TMP/plan.txt"
if [ -n "$divergence" ]; then rb_say "$divergence"; fi
rb_py "$plan_json" "$RB_TMP/diff.out" >"$RB_TMP/details.json" <<'PY'
import json, sys
print(json.dumps({"plan": json.load(open(sys.argv[1]))["plan"], "comparison": json.load(open(sys.argv[2]))}))
PY

if ! rb_ask "Repair $damaged from $healthy now (seglog repair --apply)?"; then
    if [ -n "$divergence" ]; then
        rb_finish $RB_HUMAN "repair needed below where it diverges from $healthy (plan shown, not applied); keep what it alone holds (the commands above) before it rejoins"
    fi
    rb_finish $RB_ACTION "repair needed: plan shown, not applied"
fi
rb_seglog apply repair --apply --format json ${tail_args[@]+"${tail_args[@]}"} ${backup_args[@]+"${backup_args[@]}"} \
    --from "$healthy" "$damaged"
applied_diverges=""
if [ "$RB_RC" = 3 ]; then applied_diverges=$(divergence_of "$RB_TMP/apply.out"); fi
case "$RB_RC" in
    0) ;;
    3) if [ -z "$applied_diverges" ]; then
           rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_HUMAN "seglog repair refused (nothing changed)"
       fi ;;  # applied, and the divergence below stated
    5) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
    6) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_CANNOT_WRITE "seglog cannot write here: see the line above" ;;
    *) rb_say_file "$RB_TMP/apply.err"; rb_finish $RB_HUMAN "seglog repair --apply stopped with exit $RB_RC" ;;
esac
rb_applied_from "$RB_TMP/apply.out"
rb_seglog verify-after verify --format json "$damaged"
if [ "$RB_RC" = 3 ]; then
    salvage
    rb_finish $RB_HUMAN "repaired from $healthy, but damage remains that it does not hold (undo: $RB_UNDO)"
fi
if [ -n "$applied_diverges" ]; then
    rb_finish $RB_HUMAN "repaired from $healthy byte for byte below where it diverges from it: keep what it alone holds (the commands above) before the broker starts (undo: $RB_UNDO)"
fi
rb_finish $RB_ACTION "repaired from $healthy byte for byte; start the broker (undo: $RB_UNDO)"
