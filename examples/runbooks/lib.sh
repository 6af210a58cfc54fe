# Shared plumbing of the seglog runbooks (sourced, not run). See README.md beside it.
#
# Provides: rb_init (scratch dir, SEGLOG/PYTHON), rb_seglog (run seglog, keep its exit status),
# rb_verify and rb_diff (seglog verify / diff as JSON, unreadable input ending the run with 4),
# rb_ask (confirmation), rb_say (human line), rb_finish (summary + --json document + exit).
# Exit statuses are the same for every runbook:
#   0 healthy / nothing to do   1 action taken or needed   2 usage error
#   3 damage or a state that needs a human   4 bad input (missing, unreadable, not Kafka data)
#   5 a broker holds the log dir's .lock     6 seglog cannot write here (read-only, disk full...)
#   70 unexpected failure (seglog or the runbook itself); README.md says each in full

# shellcheck disable=SC2034  # used by the scripts that source this file
RB_OK=0 RB_ACTION=1 RB_USAGE=2 RB_HUMAN=3 RB_BAD_INPUT=4 RB_LOCKED=5 RB_CANNOT_WRITE=6 RB_INTERNAL=70

SEGLOG=${SEGLOG:-seglog}
PYTHON=${PYTHON:-python3}
RB_JSON=0
RB_YES=0
RB_DRY_RUN=0
RB_APPLIED=false
RB_UNDO=""
RB_BACKUP_DIR=""

rb_init() {
    # $1: the runbook's name (used in the JSON document)
    RB_NAME=$1
    RB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/seglog-runbook.XXXXXX")
    # only the runbook's own scratch files go; nothing of the log dir is ever removed here
    trap 'rm -rf -- "$RB_TMP"' EXIT
    # a step that fails unexpectedly (not a seglog decision) ends the run with 70, never with a
    # status that could be read as a decision
    set -E
    trap 'rb_failed $? "$BASH_COMMAND" $LINENO' ERR
    : >"$RB_TMP/summary.txt"
    echo '{}' >"$RB_TMP/details.json"
}

rb_failed() {
    trap - ERR
    echo "$RB_NAME: unexpected failure (exit $1) of: $2 (line $3); nothing after it was done" >&2
    exit $RB_INTERNAL
}

rb_check_tools() {
    # seglog and python3 must run (called once the options are read, so -h always works)
    if ! command -v "${SEGLOG%% *}" >/dev/null 2>&1; then
        rb_finish $RB_INTERNAL "cannot run seglog ('$SEGLOG' is not on PATH; set SEGLOG=/path/to/seglog)"
    fi
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        rb_finish $RB_INTERNAL "cannot run $PYTHON (set PYTHON=/path/to/python3)"
    fi
}

rb_usage_error() {
    echo "$RB_NAME: $1" >&2
    echo "Try '$0 -h'." >&2
    exit $RB_USAGE
}

rb_say() {
    # a line of the human summary: stdout normally, stderr with --json (stdout is the document)
    printf '%s\n' "$*" >>"$RB_TMP/summary.txt"
    if [ "$RB_JSON" = 1 ]; then printf '%s\n' "$*" >&2; else printf '%s\n' "$*"; fi
}

rb_say_file() {
    # every line of a file through rb_say
    while IFS= read -r line || [ -n "$line" ]; do rb_say "$line"; done <"$1"
}

rb_seglog() {
    # rb_seglog NAME ARGS...: run seglog; stdout in $RB_TMP/NAME.out, stderr in NAME.err,
    # the exit status in RB_RC (seglog's statuses are decisions, never a reason to stop here)
    local name=$1
    shift
    RB_RC=0
    # shellcheck disable=SC2086  # SEGLOG may be a command with arguments ("python3 -m seglog_cli")
    $SEGLOG "$@" >"$RB_TMP/$name.out" 2>"$RB_TMP/$name.err" </dev/null || RB_RC=$?
    # (7 is seglog replay's "the cluster is unreachable or refused": a state the runbook reports)
    if [ "$RB_RC" = 2 ] || { [ "$RB_RC" -ge 6 ] && [ "$RB_RC" != 7 ]; }; then
        echo "$RB_NAME: seglog $1 failed (exit $RB_RC):" >&2
        sed 's/^/  /' "$RB_TMP/$name.err" >&2
        rb_finish $RB_INTERNAL "seglog $1 failed with exit status $RB_RC"
    fi
}

rb_verify() {
    # rb_verify PATH...: `seglog verify --format json` into $RB_TMP/verify.out (status in RB_RC);
    # an input seglog cannot read ends the runbook with status 4
    rb_seglog verify verify --format json "$@"
    if [ "$RB_RC" = 4 ]; then
        rb_say_file "$RB_TMP/verify.err"
        rb_finish $RB_BAD_INPUT "seglog verify could not read the input"
    fi
}

rb_diff() {
    # rb_diff ARGS...: `seglog diff --format json ARGS` into $RB_TMP/diff.out (status in RB_RC:
    # 0, 1 or 3); a replica seglog cannot read ends the runbook with status 4
    rb_seglog diff diff --format json "$@"
    case "$RB_RC" in
        0 | 1 | 3) ;;
        4) rb_say_file "$RB_TMP/diff.err"; rb_finish $RB_BAD_INPUT "seglog diff could not read a replica" ;;
        *) rb_finish $RB_INTERNAL "seglog diff stopped with exit $RB_RC" ;;
    esac
}

rb_py() {
    # rb_py ARGS... <<'PY' ... PY: a small Python step (JSON handling) read from a here-document,
    # sys.argv[1:] = ARGS
    "$PYTHON" - "$@"
}

rb_ask() {
    # rb_ask QUESTION: 0 when the change may go ahead (--yes, or 'y' typed), 1 otherwise
    if [ "$RB_YES" = 1 ]; then return 0; fi
    if [ "$RB_DRY_RUN" = 1 ]; then return 1; fi
    printf '%s [y/N] ' "$1" >&2
    local answer=""
    read -r answer || echo >&2
    case "$answer" in
        y | Y | yes | YES | Yes) return 0 ;;
        *) return 1 ;;
    esac
}

rb_applied() {
    # rb_applied BACKUP_DIR: record a change and print the exact command that undoes it
    RB_APPLIED=true
    RB_BACKUP_DIR=$1
    local quoted
    printf -v quoted '%q' "$1"
    RB_UNDO="$SEGLOG undo --apply $quoted"
    rb_say "Changed. Backup of every removed or replaced byte: $1"
    rb_say "UNDO: $RB_UNDO"
}

rb_applied_from() {
    # rb_applied_from JSON: rb_applied with the backup directory of a seglog --apply --format json
    # document (nothing when the command changed nothing)
    local backup
    backup=$(rb_py "$1" <<'PY'
import json, sys
print((json.load(open(sys.argv[1]))["applied"] or {}).get("backupDir") or "")
PY
)
    if [ -n "$backup" ]; then rb_applied "$backup"; fi
}

rb_replay_applied() {
    # rb_replay_applied NAME CONTEXT: after `rb_seglog NAME replay --apply --format json ...`: a
    # refusal or a cluster failure ends the run (status 3: run again once resolved; what the
    # cluster acknowledged is kept in the progress file), anything unexpected with 70; otherwise
    # the destination offsets the records were given are said
    case "$RB_RC" in
        0 | 1) ;;
        3) rb_say_file "$RB_TMP/$1.err"; rb_finish $RB_HUMAN "$2seglog replay refused (see above); run again once resolved" ;;
        7) rb_say_file "$RB_TMP/$1.err"
           rb_finish $RB_HUMAN "$2the cluster failed the replay; what it acknowledged is kept: run the same command again to resume" ;;
        *) rb_say_file "$RB_TMP/$1.err"; rb_finish $RB_INTERNAL "seglog replay --apply stopped with exit $RB_RC" ;;
    esac
    RB_APPLIED=true
    rb_py "$RB_TMP/$1.out" >"$RB_TMP/$1.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for d in doc["result"]["progress"]["destinations"]:
    if d["end"] > d["start"]:
        print(f"  {d['topic']}-{d['partition']}: the records are at offsets {d['start']}..{d['end'] - 1}")
for command in doc["resetCommands"]:
    print(f"  {command}")
if doc["groupsCsv"]:
    print(f"  consumer group offsets (kafka-consumer-groups.sh --from-file): {doc['groupsCsv']}")
PY
    rb_say_file "$RB_TMP/$1.txt"
}

rb_details() {
    # rb_details FILE: the runbook-specific part of the --json document
    cp -- "$1" "$RB_TMP/details.json"
}

rb_finish() {
    # rb_finish STATUS DECISION: the last summary line, the --json document, the exit status
    local status=$1 decision=$2
    rb_say "$RB_NAME: $decision (exit $status)"
    if [ "$RB_JSON" = 1 ]; then
        rb_py "$RB_NAME" "$status" "$decision" "$RB_APPLIED" "$RB_UNDO" "$RB_BACKUP_DIR" "$RB_TMP" <<'PY'
import json, sys
name, status, decision, applied, undo, backup, tmp = sys.argv[1:8]
with open(tmp + "/details.json") as f:
    details = json.load(f)
with open(tmp + "/summary.txt") as f:
    summary = f.read().splitlines()
doc = {"runbook": name, "version": 1, "status": int(status), "decision": decision,
       "applied": applied == "true", "undo": undo or None, "backupDir": backup or None,
       "summary": summary}
doc.update(details)
print(json.dumps(doc, indent=1))
PY
    fi
    exit "$status"
}

rb_common_option() {
    # rb_common_option ARG: 0 when ARG is one of the options every runbook takes
    case "$1" in
        --json) RB_JSON=1 ;;
        --yes | -y) RB_YES=1 ;;
        --dry-run | -n) RB_DRY_RUN=1 ;;
        *) return 1 ;;
    esac
}

rb_help() {
    # print the script's header comment (lines 2.. up to the first non-comment line)
    sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'

    exit $RB_OK
}

rb_partitions() {
    # rb_partitions PATH...: RB_PARTITIONS = the partition dirs to judge: a partition dir as it is;
    # a log dir (it has meta.properties or a checkpoint file): its partitions, without Kafka's
    # internal __ topics (compacted, never deleted by retention)
    RB_PARTITIONS=()
    local p dir
    for p in "$@"; do
        if [ -f "$p/meta.properties" ] || [ -f "$p/recovery-point-offset-checkpoint" ]; then
            for dir in "$p"/*-[0-9]*; do
                [ -d "$dir" ] || continue
                case "${dir##*/}" in __*) continue ;; esac
                RB_PARTITIONS+=("$dir")
            done
        else
            RB_PARTITIONS+=("$p")
        fi
    done
}

rb_inputs() {
    # rb_inputs MESSAGE PATH...: once the options are read (so -h always works): no PATH is a
    # usage error saying MESSAGE; then seglog and python3 must run and every PATH must exist
    # (callers pass an array as ${a[@]+"${a[@]}"}: bash 3.2 with set -u refuses an empty "${a[@]}")
    local message=$1
    shift
    [ $# -gt 0 ] || rb_usage_error "$message"
    rb_check_tools
    rb_require_paths "$@"
}

rb_require_paths() {
    # every argument must exist
    local p
    for p in "$@"; do
        if [ ! -e "$p" ]; then
            rb_finish $RB_BAD_INPUT "no such file or directory: $p"
        fi
    done
}
