#!/usr/bin/env bash
# 12-partitions-going-stray.sh: save what a KRaft broker sets aside as -stray at its restart.
#
# Usage: 12-partitions-going-stray.sh [-h] [--json] [--dry-run] [--metadata-log DIR]
#                                     [--out NEW_DIR] [--format copy|jsonl] [--topic-map OLD:NEW]
#                                     [--bootstrap-server HOST:PORT] LOG_DIR...
#
# When to use it: a KRaft broker was down while topics were deleted (or deleted and re-created
#   with the same name), or while a reassignment moved its replicas away; or a partition dir lost
#   its partition.metadata. At its next start Kafka (isStrayKraftReplica) renames such dirs
#   <topic>-<p>.<32 hex>-stray, keeps them on disk and no longer serves their records, and creates
#   empty dirs, fetched from the leader, for the partitions the metadata assigns to it. Run this
#   before starting the broker (LOG_DIR: all of its log dirs), or after it (the -stray dirs are
#   then in LOG_DIR) to keep a copy of those records before anyone removes the dirs.
# What it does: before the restart, `seglog verify --metadata-log DIR` previews the start-up
#   (per partition dir: kept, marked stray with Kafka's reason and the metadata record that
#   decided it, created empty). --metadata-log names a current copy of the metadata log (a
#   controller's log dir, or a running broker's, or a copy); without it the broker's own copy is
#   read, which ends where the broker stopped, and the summary says so. After the restart, the
#   <topic>-<p>.<uuid>-stray dirs already in LOG_DIR are what was set aside. With --out, each of
#   those dirs is saved into NEW_DIR: --format copy (default) `cp -a` of the whole dir, --format
#   jsonl a lossless export (`seglog dump --deep-iteration --format jsonl --payload-encoding
#   base64`). --topic-map OLD:NEW prints the `seglog replay` command that sends the saved records
#   of topic OLD into the re-created topic NEW (run it without --apply first: it plans).
# What it changes: nothing in LOG_DIR: seglog never renames nor deletes a dir. --out creates the
#   new NEW_DIR only (an existing one is refused). --dry-run: says what it would save, saves nothing.
# How to undo it: remove NEW_DIR. (Removing a -stray dir from the log dir is left to you, once the
#   saved copy is checked.)
#
# Exit status (the same for every runbook, see README.md):
#   0  healthy: nothing goes stray and no -stray dir is there
#   1  action taken (saved into --out) or needed (dirs go stray or are stray: give --out to save
#      them; or the preview read only the broker's own metadata log: give --metadata-log)
#   2  usage error
#   4  bad input: a path is missing or not a log dir, an unreadable metadata log, --out exists
#   70 unexpected failure
set -eu
# shellcheck source=lib.sh
. "$(dirname -- "$0")/lib.sh"
rb_init partitions-going-stray

log_dirs=()
metadata_log=""
out=""
format=copy
topic_map=""
bootstrap=localhost:9092
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help) rb_help ;;
        --metadata-log) [ $# -ge 2 ] || rb_usage_error "--metadata-log needs a directory"; metadata_log=$2; shift ;;
        --out) [ $# -ge 2 ] || rb_usage_error "--out needs a directory"; out=$2; shift ;;
        --format) [ $# -ge 2 ] || rb_usage_error "--format needs copy or jsonl"
            case "$2" in copy | jsonl) format=$2 ;; *) rb_usage_error "--format is copy or jsonl" ;; esac; shift ;;
        --topic-map) [ $# -ge 2 ] || rb_usage_error "--topic-map needs OLD:NEW"
            case "$2" in ?*:?*) topic_map=$2 ;; *) rb_usage_error "--topic-map is OLD:NEW" ;; esac; shift ;;
        --bootstrap-server) [ $# -ge 2 ] || rb_usage_error "--bootstrap-server needs HOST:PORT"; bootstrap=$2; shift ;;
        -*) rb_common_option "$1" || rb_usage_error "unknown option $1" ;;
        *) log_dirs+=("$1") ;;
    esac
    shift
done
rb_inputs "give the broker's log dir(s)" ${log_dirs[@]+"${log_dirs[@]}"}
if [ -n "$metadata_log" ]; then rb_require_paths "$metadata_log"; fi
if [ -n "$out" ] && [ -e "$out" ]; then
    rb_finish $RB_BAD_INPUT "--out $out exists: give a new directory (nothing is overwritten)"
fi

rb_verify ${metadata_log:+--metadata-log "$metadata_log"} "${log_dirs[@]}"
rb_py "$RB_TMP/verify.out" "$RB_TMP/details.json" "$RB_TMP/save.txt" "${log_dirs[@]}" >"$RB_TMP/preview.txt" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
details, save_list, log_dirs = sys.argv[2], sys.argv[3], sys.argv[4:]
previews = d.get("startupPreview", [])
going, own = [], False
for p in previews:
    own = own or p["ownCopy"]
    print(f"broker {p['brokerId']}: judged against {p['metadataLog']} up to offset {p['endOffset']}"
          + (" (its own copy: the restart first catches up past it; --metadata-log names a current one)"
             if p["ownCopy"] else ""))
    for o in p["partitions"]:
        name = f"{o['topic']}-{o['partition']}"
        if o["outcome"] == "stray":
            by = o["decidedBy"]
            why = o["kafkaReason"] + (f" ({by['record']} at offset {by['offset']})" if by else "")
            print(f"goes stray: {name}: {why}")
            going.append(o["path"])
        elif o["outcome"] == "created":
            print(f"created empty: {name} (topic id {o['topicId']}), fetched from the leader")
        elif o["wrongDirectory"]:
            print(f"kept in another log dir than assigned: {name} ({o['path']})")
already = []
for log_dir in log_dirs:
    if os.path.isdir(log_dir):
        already += sorted(os.path.join(log_dir, n) for n in os.listdir(log_dir)
                          if n.endswith("-stray") and os.path.isdir(os.path.join(log_dir, n)))
for path in already:
    print(f"already stray: {path}")
with open(save_list, "w") as f:
    f.write("".join(p + "\n" for p in going + already))
json.dump({"previews": previews, "goingStray": going, "alreadyStray": already, "ownCopyOnly": own,
           "saved": []}, open(details, "w"))
PY
rb_say_file "$RB_TMP/preview.txt"
to_save=()
while IFS= read -r line; do to_save+=("$line"); done <"$RB_TMP/save.txt"
own_only=$(rb_py "$RB_TMP/details.json" <<'PY'
import json, sys
print("yes" if json.load(open(sys.argv[1]))["ownCopyOnly"] else "no")
PY
)
if [ "${#to_save[@]}" = 0 ]; then
    if [ "$own_only" = yes ]; then
        rb_finish $RB_ACTION "nothing goes stray by the broker's own (old) metadata log: give --metadata-log with a controller's copy"
    fi
    rb_finish $RB_OK "healthy: nothing goes stray and no -stray dir is there"
fi
if [ -z "$out" ] || [ "$RB_DRY_RUN" = 1 ]; then
    rb_finish $RB_ACTION "${#to_save[@]} dir(s) to save: give --out NEW_DIR (copies, or --format jsonl), then start the broker"
fi

mkdir -- "$out"
: >"$RB_TMP/saved.txt"
for p in ${to_save[@]+"${to_save[@]}"}; do
    name=${p%/}
    name=${name##*/}
    if [ "$format" = copy ]; then
        cp -a -- "$p" "$out/$name"
        printf '%s\n' "$out/$name" >>"$RB_TMP/saved.txt"
    else
        rb_seglog dump dump --deep-iteration --format jsonl --payload-encoding base64 --no-progress "$p"
        if [ "$RB_RC" = 4 ]; then
            rb_say_file "$RB_TMP/dump.err"
            rb_finish $RB_BAD_INPUT "seglog dump could not read $p"
        fi
        cp -- "$RB_TMP/dump.out" "$out/$name.jsonl"
        printf '%s\n' "$out/$name.jsonl" >>"$RB_TMP/saved.txt"
    fi
    rb_say "saved: $p -> $(tail -1 "$RB_TMP/saved.txt")"
done
rb_py "$RB_TMP/details.json" "$RB_TMP/saved.txt" <<'PY'
import json, sys
details = json.load(open(sys.argv[1]))
details["saved"] = open(sys.argv[2]).read().splitlines()
json.dump(details, open(sys.argv[1], "w"))
PY
RB_APPLIED=true
if [ -n "$topic_map" ]; then
    printf -v quoted_out '%q' "$out"
    rb_say "replay the saved records of ${topic_map%%:*} into ${topic_map#*:} (plan; add --apply to send):"
    rb_say "  $SEGLOG replay --bootstrap-server $bootstrap --topic-map $topic_map $quoted_out/*"
fi
rb_finish $RB_ACTION "${#to_save[@]} dir(s) saved into $out; remove it to undo"
