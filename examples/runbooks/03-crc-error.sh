#!/usr/bin/env bash
# 03-crc-error.sh: a CRC error (CorruptRecordException) on one replica: which batches, which offsets.
#
# Usage: 03-crc-error.sh [-h] [--json] [--deep] [--bootstrap-server HOST:PORT] [--group GROUP]
#                        [--out FILE] LOG_DIR|PARTITION_DIR...
#
# When to use it: a consumer or a follower fails with "Record is corrupt (stored crc = ...)" or
#   CorruptRecordException, or a broker log names a corrupt batch. Run it on a copy of the
#   replica's partition dir, or on the replica itself while its broker is stopped.
# What it does: `seglog verify` (--deep: also decodes every record) locates every batch that
#   fails its CRC or cannot be framed; the plan of `seglog recover --mode salvage --format json`
#   (only read, never applied) gives the byte range of each damaged place and the offsets it
#   held, from the valid batches around it, so the unreadable offset range is exact even when
#   the damaged header lies about its own offsets (damage inside a batch whose CRC holds, found
#   by --deep, is placed with `seglog dump`). It prints, per partition, the range, a ready-made
#   kafka-delete-records.sh offset JSON (written to --out when given) and the
#   kafka-consumer-groups.sh command that moves a consumer group past the range.
# What it changes: nothing in the log dir. With --out it writes that one new file (never
#   overwrites one).
# How to undo it: nothing to undo in the log dir; remove the --out file if you do not want it.
#   The printed Kafka commands are not run for you: delete-records moves the log start offset
#   of every replica and cannot be undone; prefer re-replicating the damaged replica from a
#   healthy one (reassign the partition away and back) when the other replicas are clean.
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: no CRC or framing damage
#   1  (not used by this runbook)
#   2  usage error
#   3  needs a human: damaged batches found (ranges and commands printed)
#   4  bad input: a path is missing or not readable Kafka data, or --out exists
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init crc-error

level=shallow
bootstrap=localhost:9092
group='<GROUP>'
out=""
paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --deep) level=deep ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        --group) [ $# -ge 2 ] || rb_usage_error "--group needs a consumer group"; group=$2; shift ;;
        --out) [ $# -ge 2 ] || rb_usage_error "--out needs a file name"; out=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) paths+=("$1") ;;
    esac
    shift
done
rb_inputs "give the replica's log dir or partition dirs" ${paths[@]+"${paths[@]}"}
if [ -n "$out" ] && [ -e "$out" ]; then
    rb_finish $RB_BAD_INPUT "--out $out exists: choose a new file name (nothing is overwritten)"
fi

rb_seglog verify verify --level "$level" --format json "${paths[@]}"
if [ "$RB_RC" = 4 ]; then
    rb_say_file "$RB_TMP/verify.err"
    rb_finish $RB_BAD_INPUT "seglog verify could not read the input"
fi
# the .log files with batch damage, one per line
rb_py "$RB_TMP/verify.out" >"$RB_TMP/damaged-logs.txt" <<'PY'
import json, sys
BATCH_DAMAGE = {"BATCH_CRC_MISMATCH", "CORRUPT_REGION", "BATCH_SIZE_TOO_SMALL", "BATCH_SIZE_MISMATCH",
                "UNKNOWN_MAGIC", "UNKNOWN_CODEC", "RECORD_PARSE_ERROR", "DECOMPRESSION_FAILED",
                "RECORD_OFFSET_OUT_OF_RANGE", "CONTROL_RECORD_INVALID", "TORN_TAIL", "TRAILING_GARBAGE",
                "ZERO_FILLED_TAIL"}
d = json.load(open(sys.argv[1]))
seen = []
for p in d["partitions"]:
    for f in p["findings"]:
        if f["severity"] == "error" and f["code"] in BATCH_DAMAGE and f["path"] not in seen:
            seen.append(f["path"])
sys.stdout.write("".join(path + "\n" for path in seen))
PY
if [ ! -s "$RB_TMP/damaged-logs.txt" ]; then
    rb_say "verify --level $level: no batch fails its CRC or framing"
    rb_finish $RB_OK "healthy: no CRC or framing damage"
fi
# the damaged places and their offsets: the salvage plan's damagedRanges (read, never applied)
rb_seglog plan recover --mode salvage --format json "${paths[@]}"
case "$RB_RC" in
    4) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_BAD_INPUT "seglog recover could not read the input" ;;
    5) rb_say_file "$RB_TMP/plan.err"; rb_finish $RB_LOCKED "a broker holds the .lock: stop it first" ;;
esac
# the .log files with damage the plan does not place (inside a batch whose CRC holds, or a refused
# partition): seglog dump gives the valid batches around it
rb_py "$RB_TMP/verify.out" "$RB_TMP/plan.out" "$RB_TMP/damaged-logs.txt" >"$RB_TMP/dump-logs.txt" <<'PY'
import json, os, sys
plan = json.load(open(sys.argv[2]))
cut = [(os.path.realpath(r["path"]), r["position"], r["position"] + r["bytes"])
       for p in plan["partitions"] for r in p["damagedRanges"]]
logs = set(open(sys.argv[3]).read().splitlines())
v = json.load(open(sys.argv[1]))
seen = []
for p in v["partitions"]:
    for f in p["findings"]:
        if f["path"] in logs and f["severity"] == "error" and f["path"] not in seen and not any(
                path == os.path.realpath(f["path"]) and start <= f["position"] < end for path, start, end in cut):
            seen.append(f["path"])
sys.stdout.write("".join(path + "\n" for path in seen))
PY
n=0
while IFS= read -r log; do
    n=$((n + 1))
    rb_seglog "dump-$n" dump --format jsonl --no-progress "$log"
    if [ "$RB_RC" = 4 ]; then rb_finish $RB_BAD_INPUT "seglog dump could not read $log"; fi
done <"$RB_TMP/dump-logs.txt"

rb_py "$RB_TMP" "$n" "$RB_TMP/verify.out" "$bootstrap" "$group" "${out:-}" "$RB_TMP/plan.out" >"$RB_TMP/ranges.txt" <<'PY'
import json, os, sys
tmp, n, verify, bootstrap, group, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
plan = json.load(open(sys.argv[7]))
BAD = {"BATCH_CRC_MISMATCH", "CORRUPT_REGION", "BATCH_SIZE_TOO_SMALL", "BATCH_SIZE_MISMATCH", "UNKNOWN_MAGIC",
       "UNKNOWN_CODEC", "RECORD_PARSE_ERROR", "DECOMPRESSION_FAILED", "RECORD_OFFSET_OUT_OF_RANGE",
       "CONTROL_RECORD_INVALID", "TORN_TAIL", "TRAILING_GARBAGE", "ZERO_FILLED_TAIL"}
v = json.load(open(verify))
findings = {}
for p in v["partitions"]:
    for f in p["findings"]:
        if f["severity"] == "error" and f["code"] in BAD:
            findings.setdefault(f["path"], []).append((f, p))
cut = [(os.path.realpath(r["path"]), r) for p in plan["partitions"] for r in p["damagedRanges"]]


def placed(f):
    """The salvage plan's damaged range holding the finding, if any."""
    return next((r for path, r in cut if path == os.path.realpath(f["path"])
                 and r["position"] <= f["position"] < r["position"] + r["bytes"]), None)


ranges = []   # one per damaged place: topic, partition, first, last, batches
nameless = []  # damaged places that held no offset, or whose offsets cannot be named
for path, places in findings.items():
    for f, p in places:
        r = placed(f)
        if r is None:
            continue
        if r["offsets"] == "known":
            ranges.append({"topic": p["topic"], "partition": p["partition"], "path": path, "code": f["code"],
                           "position": f["position"], "first": r["firstOffset"], "last": r["lastOffset"],
                           "message": f["message"]})
        else:
            nameless.append((p, f, r))
for i in range(1, n + 1):
    lines = [json.loads(line) for line in open(f"{tmp}/dump-{i}.out") if line.strip()]
    head = next(x for x in lines if x["type"] == "file")
    batches = [x for x in lines if x["type"] == "batch" and "lastOffset" in x]
    valid = [b for b in batches if b["isvalid"]]
    path = head["path"]
    for f, p in findings.get(path, []):
        if placed(f) is not None:
            continue  # the plan placed it
        before = [b for b in valid if b["position"] < f["position"]]
        after = [b for b in valid if b["position"] > f["position"]]
        first = before[-1]["lastOffset"] + 1 if before else head["baseOffset"]
        if after:
            last = after[0]["baseOffset"] - 1
        else:
            last = p["logEndOffset"] - 1 if p["logEndOffset"] is not None else first
        if last < first:   # the finding names a batch whose offsets the next one covers again
            last = first
        ranges.append({"topic": p["topic"], "partition": p["partition"], "path": path, "code": f["code"],
                       "position": f["position"], "first": first, "last": last,
                       "message": f["message"]})
# merge places of one partition whose ranges touch
ranges.sort(key=lambda r: (r["topic"], r["partition"], r["first"]))
merged = []
for r in ranges:
    m = merged[-1] if merged else None
    if m and (m["topic"], m["partition"]) == (r["topic"], r["partition"]) and r["first"] <= m["last"] + 1:
        m["last"] = max(m["last"], r["last"])
        m["places"].append({k: r[k] for k in ("path", "code", "position", "message")})
    else:
        merged.append(dict(r, places=[{k: r[k] for k in ("path", "code", "position", "message")}]))
for r in merged:
    for k in ("path", "code", "position", "message"):
        r.pop(k)
for r in merged:
    tp = f"{r['topic']}-{r['partition']}"
    print(f"{tp}: offsets {r['first']}..{r['last']} unreadable ({r['last'] - r['first'] + 1} offset(s))")
    for place in r["places"]:
        print(f"  {place['code']} {place['path']} position {place['position']}: {place['message']}")
    r["consumerReset"] = (f"kafka-consumer-groups.sh --bootstrap-server {bootstrap} --group {group} "
                          f"--topic {r['topic']}:{r['partition']} --reset-offsets --to-offset {r['last'] + 1} --execute")
    print(f"  skip it for a consumer group: {r['consumerReset']}")
unnamed = []
for p, f, r in nameless:
    tp = f"{p['topic']}-{p['partition']}"
    what = ("held no offset" if r["offsets"] == "none" else
            "held offsets that cannot be named" + (f" (from {r['firstOffset']} on)" if r["firstOffset"] is not None else ""))
    print(f"{tp}: damaged bytes that {what}, nothing to skip: {f['code']} {f['path']} position {f['position']}: "
          f"{r['why']}")
    unnamed.append({"topic": p["topic"], "partition": p["partition"], "path": f["path"], "code": f["code"],
                    "position": f["position"], "offsets": r["offsets"], "why": r["why"]})
# delete-records: the highest end per partition (it removes everything below the offset)
ends = {}
for r in merged:
    key = (r["topic"], r["partition"])
    ends[key] = max(ends.get(key, 0), r["last"] + 1)
delete_records = {"partitions": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(ends.items())],
                  "version": 1}
text = json.dumps(delete_records, indent=1)
print("kafka-delete-records.sh offset JSON (deletes EVERY record below each offset, on every replica):")
print(text)
target = out or "offsets.json"
print(f"  kafka-delete-records.sh --bootstrap-server {bootstrap} --offset-json-file {target}")
if out:
    with open(out, "x") as f:
        f.write(text + "\n")
    print(f"  written to {out}")
json.dump({"ranges": merged, "unnamed": unnamed, "deleteRecords": delete_records, "offsetJsonFile": out or None},
          open(f"{tmp}/details.json", "w"))
PY
rb_say_file "$RB_TMP/ranges.txt"
rb_say "If another replica is clean (run this runbook on it), rebuild this one from it rather than deleting records."
if [ -n "$out" ] && [ -f "$out" ]; then
    printf -v RB_UNDO 'rm -- %q' "$out"
    rb_say "UNDO (the file this runbook wrote): $RB_UNDO"
fi
rb_finish $RB_HUMAN "damaged batches found: choose re-replication, delete-records or a consumer reset"
