#!/usr/bin/env bash
# 09-export-topic.sh: salvage a dead cluster's disks: export every record of a topic.
#
# Usage: 09-export-topic.sh [-h] [--json] --topic TOPIC --out NEW_DIR [--format jsonl|parquet]
#                           [--payload-encoding base64|utf8|hex] [--spark [--master MASTER]]
#                           [--replay-to HOST:PORT [--producer-config FILE] [--yes|--dry-run]] LOG_DIR...
#
# When to use it: a cluster is gone for good (or a disk was pulled from a dead broker) and the
#   records of a topic must be kept or moved elsewhere. Give every log dir you have (each
#   broker's); the same partition found in several log dirs is exported once per copy, in
#   files named after the log dir, so you can keep the longest. Records decoded from a batch
#   whose CRC fails go to NEW_DIR/TOPIC-N.suspect.jsonl, apart from the trusted ones.
# What it does: for each partition dir TOPIC-N, `seglog dump --deep-iteration --format jsonl`
#   reads every batch it can (past damage, which it reports), keeps the data records (control
#   records, i.e. transaction markers, are left out; records of aborted transactions are kept:
#   it is a salvage) and writes them to NEW_DIR/TOPIC-N.jsonl (one JSON object per record:
#   topic, partition, offset, timestamp, key, value, headers, ...; keys and values in
#   --payload-encoding, default base64, lossless). --format parquet writes
#   NEW_DIR/TOPIC-N.parquet instead (needs pyarrow; one partition at a time in memory). For big
#   dirs, --spark reads the same partition dirs with the seglog Spark source on --master
#   (default local[2]; spark://host:7077, yarn, ...; only when pyspark is importable) and writes
#   Parquet: NEW_DIR/spark/TOPIC-N/ (data records: control records left out) and
#   NEW_DIR/spark/TOPIC-N.suspect/ (records of batches failing their CRC, kept apart); the
#   damage is found and reported by the plain path's own `seglog dump --deep-iteration` (a
#   local pass whose records are dropped), so the SKIPPED lines and the exit status are the
#   plain path's. --format and --payload-encoding apply to the plain path only. Load the JSON Lines into a new
#   partition with: seglog append --input FILE --input-format jsonl --payload-encoding base64 ...
#   Each JSON Lines record names its encoding ("encoding"); with --payload-encoding utf8, records
#   whose bytes are not UTF-8 are marked "lossy": true (seglog replay refuses them).
# Replay into a new cluster: --replay-to HOST:PORT then plans `seglog replay` of the same
#   partition dirs into that cluster (read from the log dirs, not from the export: a
#   read_committed replay needs the transaction markers the export leaves out): the topic is
#   created with the source's partition count and configs when missing, and the consumer
#   groups' committed offsets are translated (kafka-consumer-groups.sh commands and a CSV). It
#   shows the plan, asks (--yes, --dry-run), and sends exactly once, with progress in
#   ./seglog-replay-TOPIC.json; killed or failed, run it again (with a new --out) to resume.
# What it changes: nothing in the log dirs (read only). It creates NEW_DIR, which must not
#   exist yet, and the files in it; with --replay-to and your yes, the topic in that cluster
#   (created if missing, the records appended).
# How to undo it: the exact command is printed: rm -r -- NEW_DIR (only the export's own files).
#   Records replayed into a cluster cannot be taken back one by one (kafka-topics.sh --delete
#   removes the topic if it was created for the replay).
#
# Exit status (the same for every runbook, see README.md):
#   0  every record exported; no damage met
#   1  --replay-to: exported, and replayed (offsets printed) or a replay needed (plan shown,
#      nothing sent)
#   2  usage error (also: --spark without pyspark, parquet without pyarrow)
#   3  needs a human: exported what was readable, but damaged bytes were skipped (listed with
#      their offsets); --replay-to: the replay was refused, the cluster cannot be reached or
#      refused, or it failed half-way (run again to resume)
#   4  bad input: no TOPIC-N partition dir in the log dirs, unreadable, or NEW_DIR exists
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init export-topic

topic=""
out=""
format=jsonl
encoding=base64
spark=0
master=""
replay_to=""
replay_args=()
log_dirs=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --topic) [ $# -ge 2 ] || rb_usage_error "--topic needs a topic"; topic=$2; shift ;;
        --out) [ $# -ge 2 ] || rb_usage_error "--out needs a directory"; out=$2; shift ;;
        --format) [ $# -ge 2 ] || rb_usage_error "--format needs jsonl or parquet"
            case "$2" in jsonl | parquet) format=$2 ;; *) rb_usage_error "--format is jsonl or parquet, not '$2'" ;; esac
            shift ;;
        --payload-encoding) [ $# -ge 2 ] || rb_usage_error "--payload-encoding needs base64, utf8 or hex"
            case "$2" in base64 | utf8 | hex) encoding=$2 ;; *) rb_usage_error "--payload-encoding is base64, utf8 or hex" ;; esac
            shift ;;
        --spark) spark=1 ;;
        --replay-to) [ $# -ge 2 ] || rb_usage_error "--replay-to needs the new cluster's HOST:PORT"; replay_to=$2; shift ;;
        --producer-config) [ $# -ge 2 ] || rb_usage_error "--producer-config needs a file"
            replay_args+=(--producer-config "$2"); shift ;;
        --master) [ $# -ge 2 ] || rb_usage_error "--master needs a Spark master (local[2], spark://host:7077, yarn)"
            master=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) log_dirs+=("$1") ;;
    esac
    shift
done
[ -n "$topic" ] || rb_usage_error "give the topic with --topic"
[ -n "$out" ] || rb_usage_error "give a new output directory with --out"
if [ -n "$master" ] && [ "$spark" = 0 ]; then rb_usage_error "--master is for --spark"; fi
master=${master:-local[2]}
rb_inputs "give the log dir(s) holding the topic" ${log_dirs[@]+"${log_dirs[@]}"}
if [ -e "$out" ]; then
    rb_finish $RB_BAD_INPUT "--out $out exists: give a new directory (nothing is overwritten)"
fi
if [ "$spark" = 1 ] && ! "$PYTHON" -c 'import pyspark' 2>/dev/null; then
    rb_usage_error "--spark needs pyspark (pip install 'seglog[spark]'); without --spark the export uses seglog dump"
fi
if [ "$format" = parquet ] && [ "$spark" = 0 ] && ! "$PYTHON" -c 'import pyarrow' 2>/dev/null; then
    rb_usage_error "--format parquet needs pyarrow (pip install pyarrow), or use --format jsonl"
fi

partitions=()
for dir in "${log_dirs[@]}"; do
    for p in "$dir"/"$topic"-*; do
        [ -d "$p" ] || continue
        case "${p##*/}" in "$topic"-*[!0-9]* | "$topic"-) continue ;; esac
        partitions+=("$p")
    done
done
if [ ${#partitions[@]} -eq 0 ]; then
    rb_finish $RB_BAD_INPUT "no partition dir $topic-N in ${log_dirs[*]}"
fi
bytes=$(du -sk -- "${partitions[@]}" | awk '{s += $1} END {print s * 1024}')
rb_say "topic $topic: ${#partitions[@]} partition dir(s), $bytes bytes on disk"

mkdir -- "$out"
# where partition dir P (the N-th) goes in DIR, with SUFFIX: DIR/<topic>-<partition>SUFFIX, or,
# when the same partition came from another log dir before, DIR/<topic>-<partition>.<log dir>.N SUFFIX
out_name() {
    local name=${2##*/}
    if [ -e "$1/$name$4" ]; then
        printf '%s\n' "$1/$name.$(basename -- "$(dirname -- "$2")").$3$4"
    else
        printf '%s\n' "$1/$name$4"
    fi
}

damaged=0
if [ "$spark" = 1 ]; then
    # the same partition dirs, read by Spark tasks; the damage report from the same
    # `seglog dump --deep-iteration` as the plain path (its records dropped here), so the
    # report and the exit status are the plain path's
    mkdir -- "$out/spark"
    n=0
    jobs=()
    for p in "${partitions[@]}"; do
        n=$((n + 1))
        target=$(out_name "$out/spark" "$p" "$n" "")
        jobs+=("$p" "$target")
        dump_rc=0
        # shellcheck disable=SC2086
        { $SEGLOG dump --deep-iteration --format jsonl --no-progress "$p" 2>"$RB_TMP/dump-$n.err" </dev/null ||
            echo $? >"$RB_TMP/dump-$n.rc"; } | grep -v '^{"type":"\(record\|batch\)"' >"$RB_TMP/frame-$n.jsonl" || true
        if [ -f "$RB_TMP/dump-$n.rc" ]; then dump_rc=$(cat "$RB_TMP/dump-$n.rc"); fi
        case "$dump_rc" in
            0) ;;
            1) damaged=1 ;;
            *) rb_say_file "$RB_TMP/dump-$n.err"; rb_finish $RB_BAD_INPUT "seglog dump could not read $p (exit $dump_rc)" ;;
        esac
    done
    rc=0
    rb_py "$master" "$topic" "$RB_TMP" "${jobs[@]}" >"$RB_TMP/spark.out" 2>"$RB_TMP/spark.err" <<'PY' || rc=$?
import json, os, sys
master, topic, tmp = sys.argv[1:4]
jobs = list(zip(sys.argv[4::2], sys.argv[5::2]))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
from seglog_cli.spark import register
spark = (SparkSession.builder.master(master).appName("seglog-export-" + topic)
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
register(spark)
DATA = "isControl is null or not isControl"  # legacy messages have no isControl: data
for n, (source, target) in enumerate(jobs, 1):
    def rows():  # a new load per query (Spark 4.3 keeps a read plan on a reused DataFrame)
        return spark.read.format("seglog").option("topics", topic).load(source).where(DATA)
    rows().where("isValid is null or isValid").write.parquet(target)
    rows().where("isValid = false").write.parquet(target + ".suspect")
    written = spark.read.parquet(target).selectExpr("count(*) n", "min(offset) lo", "max(offset) hi").first()
    suspect = spark.read.parquet(target + ".suspect").count()
    findings = []
    with open(f"{tmp}/frame-{n}.jsonl") as stream:
        for line in stream:
            o = json.loads(line)
            if o.get("type") in ("finding", "error", "trailingBytes"):
                findings.append(o)
    json.dump({"partition": os.path.basename(source.rstrip("/")), "source": source, "file": target,
               "records": written.n, "firstOffset": written.lo, "lastOffset": written.hi, "damage": findings,
               "suspectRecords": suspect, "suspectFile": target + ".suspect" if suspect else None},
              open(f"{tmp}/part-{n}.json", "w"))
spark.stop()
PY
    if [ "$rc" != 0 ]; then
        tail -5 "$RB_TMP/spark.err" >&2
        rb_finish $RB_INTERNAL "the Spark job failed (exit $rc) on master $master"
    fi
    rb_say "spark ($master): ${#partitions[@]} partition dir(s) -> $out/spark"
else
    if [ "$bytes" -gt 1073741824 ]; then
        rb_say "big topic: --spark reads it in parallel with Spark when pyspark is installed"
    fi
    n=0
    for p in "${partitions[@]}"; do
        n=$((n + 1))
        file=$(out_name "$out" "$p" "$n" ".$format")
        dump_rc=0
        # shellcheck disable=SC2086
        { $SEGLOG dump --deep-iteration --format jsonl --payload-encoding "$encoding" --no-progress "$p" \
            2>"$RB_TMP/dump-$n.err" </dev/null || echo $? >"$RB_TMP/dump-$n.rc"; } |
            rb_py "$file" "$format" "$RB_TMP/part-$n.json" "$p" 3<&0 <<'PY'
import json, os, sys
path, fmt, summary, source = sys.argv[1:5]
records = suspect = 0
first = last = None
findings = []
rows = [] if fmt == "parquet" else None
out = None if fmt == "parquet" else open(path, "x")
suspect_path = path.rsplit(".", 1)[0] + ".suspect.jsonl"
suspect_out = None
invalid = set()   # (segment, position) of the batches that fail their CRC
with os.fdopen(3) as stream:
    for line in stream:
        o = json.loads(line)
        kind = o.get("type")
        if kind == "batch" and o.get("isvalid") is False:
            invalid.add((os.path.basename(o.get("path", "")), o.get("position")))
        elif kind == "record" and not o.get("isControl") and (o.get("segment"), o.get("position")) in invalid:
            suspect += 1   # decoded from a batch whose CRC fails: kept apart
            suspect_out = suspect_out or open(suspect_path, "x")
            suspect_out.write(line if line.endswith("\n") else line + "\n")
        elif kind == "record" and not o.get("isControl"):
            records += 1
            first = o["offset"] if first is None else first
            last = o["offset"]
            if rows is not None:
                rows.append(o)
            else:
                out.write(line if line.endswith("\n") else line + "\n")
        elif kind in ("finding", "error", "trailingBytes"):
            findings.append(o)
if out is not None:
    out.close()
if suspect_out is not None:
    suspect_out.close()
if rows is not None:
    import pyarrow as pa, pyarrow.parquet as pq
    keys = list(dict.fromkeys(k for r in rows for k in r if k != "type"))  # legacy rows add crc, isValid
    pq.write_table(pa.Table.from_pydict({k: [r.get(k) for r in rows] for k in keys}), path)
json.dump({"partition": os.path.basename(source.rstrip("/")), "source": source, "file": path,
           "records": records, "firstOffset": first, "lastOffset": last, "damage": findings,
           "suspectRecords": suspect, "suspectFile": suspect_path if suspect else None},
          open(summary, "w"))
PY
        if [ -f "$RB_TMP/dump-$n.rc" ]; then dump_rc=$(cat "$RB_TMP/dump-$n.rc"); fi
        case "$dump_rc" in
            0) ;;
            1) damaged=1 ;;
            *) rb_say_file "$RB_TMP/dump-$n.err"; rb_finish $RB_BAD_INPUT "seglog dump could not read $p (exit $dump_rc)" ;;
        esac
    done
fi
    rb_py "$RB_TMP" "$n" "$RB_TMP/details.json" >"$RB_TMP/export.txt" <<'PY'
import json, sys
tmp, n = sys.argv[1], int(sys.argv[2])
parts = [json.load(open(f"{tmp}/part-{i}.json")) for i in range(1, n + 1)]
for p in parts:
    span = f"offsets {p['firstOffset']}..{p['lastOffset']}" if p["records"] else "no record"
    print(f"{p['partition']}: {p['records']} record(s), {span} -> {p['file']}")
    if p["suspectRecords"]:
        print(f"  {p['suspectRecords']} record(s) decoded from batches that fail their CRC: kept apart in {p['suspectFile']}")
    for f in p["damage"]:
        keys = ("position", "offset", "length", "count") if f.get("path", "") in f.get("message", "") else \
            ("path", "position", "offset", "length", "count")
        where = " ".join(f"{k} {f[k]}" for k in keys if f.get(k) is not None)
        print(f"  SKIPPED {f.get('code', f['type'])}" + (f" {where}" if where else "") + f": {f.get('message', '')}")
total = sum(p["records"] for p in parts)
print(f"exported {total} record(s) from {len(parts)} partition dir(s)")
json.dump({"partitions": parts, "records": total}, open(sys.argv[3], "w"))
PY
    rb_say_file "$RB_TMP/export.txt"
printf -v RB_UNDO 'rm -r -- %q' "$out"
rb_say "UNDO (the export's own files only): $RB_UNDO"
replayed=""
if [ -n "$replay_to" ]; then
    # the same partition dirs, replayed read_committed into the new cluster
    replay() {
        rb_seglog "$1" replay --format json --no-progress --bootstrap-server "$replay_to" --topics "$topic" \
            --create-topics --progress-file "seglog-replay-$topic.json" ${replay_args[@]+"${replay_args[@]}"} \
            "${@:2}" "${log_dirs[@]}"
    }
    replay replay-plan
    case "$RB_RC" in
        0 | 1) ;;
        3) rb_say_file "$RB_TMP/replay-plan.out.txt" 2>/dev/null || true
           rb_py "$RB_TMP/replay-plan.out" >"$RB_TMP/refused.txt" <<'PY'
import json, sys
for refusal in json.load(open(sys.argv[1]))["plan"]["refusals"]:
    print(f"REFUSED: {refusal}")
PY
           rb_say_file "$RB_TMP/refused.txt"
           rb_finish $RB_HUMAN "exported; the replay into $replay_to was refused (see above; nothing sent)" ;;
        7) rb_say_file "$RB_TMP/replay-plan.err"; rb_finish $RB_HUMAN "exported; the cluster $replay_to cannot be reached or refused" ;;
        *) rb_say_file "$RB_TMP/replay-plan.err"; rb_finish $RB_INTERNAL "seglog replay stopped with exit $RB_RC" ;;
    esac
    rb_py "$RB_TMP/replay-plan.out" >"$RB_TMP/replay-plan.txt" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]
for p in plan["partitions"]:
    print(f"replay {p['topic']}-{p['partition']}: {p['records']} record(s) -> {p['destinationTopic']}")
for t in plan["topics"]:
    print(f"  {t['topic']}: " + (f"created with {t['partitionsNeeded']} partition(s)" if t["create"] else
                                 f"exists, {t['partitions']} partition(s)"))
print(f"REPLAY {plan['records']}")
PY
    count=$(sed -n 's/^REPLAY //p' "$RB_TMP/replay-plan.txt")
    sed '/^REPLAY /d' "$RB_TMP/replay-plan.txt" >"$RB_TMP/replay-human.txt"
    rb_say_file "$RB_TMP/replay-human.txt"
    if ! rb_ask "Replay these $count record(s) of $topic into $replay_to now (seglog replay --apply)?"; then
        rb_finish $RB_ACTION "exported; replay into $replay_to needed: plan shown, nothing sent"
    fi
    replay replay-apply --apply
    rb_replay_applied replay-apply "exported; "
    replayed="; replayed into $replay_to exactly once"
fi
if [ "$damaged" = 1 ]; then
    rb_finish $RB_HUMAN "exported what was readable; damaged bytes were skipped (see SKIPPED lines)"
fi
if [ -n "$replayed" ]; then
    rb_finish $RB_ACTION "every record of $topic exported to $out$replayed"
fi
rb_finish $RB_OK "every record of $topic exported to $out"
