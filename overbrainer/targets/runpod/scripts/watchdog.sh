#!/bin/sh
# overbrainer's pod watchdog (reference-training §7.7). POSIX sh. It runs on the pod beside the
# job and deletes its own pod through Runpod's API when nobody else will: the bootstrap failed,
# the cost cap or the deadline passed, the results were retrieved, or the job was abandoned.
# The pod's own RUNPOD_API_KEY goes to curl on stdin (-H @-), never on a command line.
set -u
umask 077

API=${OVERBRAINER_API_URL:-https://api.runpod.io/v2}
AGENT="overbrainer-watchdog/${OVERBRAINER_VERSION:-unknown}"
RUN_DIR=${OVERBRAINER_RUN_DIR:?OVERBRAINER_RUN_DIR is not set}
POD_DIR=$RUN_DIR/.pod
INTERVAL=${INTERVAL:-60}
PROBE_TRIES=${PROBE_TRIES:-5}
PROBE_WAIT=${PROBE_WAIT:-10}
BOOT_GRACE=${OVERBRAINER_BOOT_GRACE:-${BOOT_GRACE:-1800}}
RETRIEVE_GRACE=${OVERBRAINER_RETRIEVE_GRACE:-${RETRIEVE_GRACE:-3600}}
LEASE_TTL=${LEASE_TTL:-900}
SNAPSHOT_LEAD=${SNAPSHOT_LEAD:-900}
SNAPSHOT_WAIT=${SNAPSHOT_WAIT:-900}
DISK_ACT=${DISK_ACT:-92}
DEADLINE=${OVERBRAINER_DEADLINE:-}
KEEP=${OVERBRAINER_KEEP_POD:-0}
VOLUME_DIR=${OVERBRAINER_VOLUME_DIR:-}
BOOT_FAILED=${OVERBRAINER_BOOT_FAILED:-0}

mkdir -p "$POD_DIR"

log() {
    line="$(date -u +%Y-%m-%dT%H:%M:%SZ) $*"
    printf '%s\n' "$line"
    printf '%s\n' "$line" >> "$POD_DIR/watchdog.log"
}

now() { date +%s; }

put() {
    printf '%s\n' "$2" > "$1.tmp" && mv -f "$1.tmp" "$1"
}

# The whole number in file $1 (exit 1 when absent or not a number).
read_number() {
    value=$(cat "$1" 2>/dev/null) || return 1
    case $value in ''|*[!0-9]*) return 1 ;; esac
    printf '%s' "$value"
}

mtime() {
    stat -c %Y "$1" 2>/dev/null || date -r "$1" +%s
}

# api METHOD PATH [JSON]: prints the HTTP status, 000 when no answer came.
api() {
    if [ $# -ge 3 ]; then
        printf 'Authorization: Bearer %s\n' "$RUNPOD_API_KEY" | curl -sS -o /dev/null \
            -w '%{http_code}' --connect-timeout 10 --max-time 30 -X "$1" -H @- -A "$AGENT" \
            -H 'Content-Type: application/json' --data "$3" "$API/$2" 2>/dev/null
    else
        printf 'Authorization: Bearer %s\n' "$RUNPOD_API_KEY" | curl -sS -o /dev/null \
            -w '%{http_code}' --connect-timeout 10 --max-time 30 -X "$1" -H @- -A "$AGENT" \
            "$API/$2" 2>/dev/null
    fi
}

probe() {
    if [ -z "${RUNPOD_API_KEY:-}" ] || [ -z "${RUNPOD_POD_ID:-}" ]; then
        echo "failed missing_key"
        return
    fi
    if ! command -v curl > /dev/null 2>&1; then
        echo "failed no_curl"
        return
    fi
    try=1
    while :; do
        code=$(api GET "pods/$RUNPOD_POD_ID")
        case $code in
            2??) echo ready; return ;;
            000|408|429|5??) ;;
            *) echo "failed http_$code"; return ;;
        esac
        [ "$try" -ge "$PROBE_TRIES" ] && break
        try=$((try + 1))
        sleep "$PROBE_WAIT"
    done
    case $code in
        000|'') echo "failed unreachable" ;;
        *) echo "failed http_$code" ;;
    esac
}

delete_pod() {
    log "deleting pod $RUNPOD_POD_ID ($1)"
    code=$(api DELETE "pods/$RUNPOD_POD_ID")
    case $code in
        200|202|204|404) log "pod $RUNPOD_POD_ID deleted ($1)"; return 0 ;;
    esac
    log "DELETE answered $code: asking to terminate"
    code=$(api POST "pods/$RUNPOD_POD_ID/action" '{"action":"terminate"}')
    case $code in
        2??) log "pod $RUNPOD_POD_ID terminated ($1)"; return 0 ;;
    esac
    log "terminate answered $code: asking to stop"
    code=$(api POST "pods/$RUNPOD_POD_ID/action" '{"action":"stop"}')
    case $code in
        2??) log "pod $RUNPOD_POD_ID stopped, not deleted ($1): its volume keeps billing"; return 0 ;;
    esac
    log "stop answered $code"
    if command -v runpodctl > /dev/null 2>&1 && runpodctl pod delete "$RUNPOD_POD_ID"; then
        log "pod $RUNPOD_POD_ID deleted by runpodctl ($1)"
        return 0
    fi
    log "cannot delete pod $RUNPOD_POD_ID yet ($1): trying again at the next check"
    return 1
}

disk_full() {
    if [ -n "$VOLUME_DIR" ] && gb=$(read_number "$POD_DIR/volume_gb"); then
        used=$(du -sk "$VOLUME_DIR" 2>/dev/null | awk '{print $1}')
        [ -n "$used" ] || return 1
        # A volume's usable room is about 94 % of its size in GB (10^9 bytes; du counts KiB).
        room=$((gb * 976562 * 94 / 100))
    else
        set -- $(df -Pk "$RUN_DIR" 2>/dev/null | awk 'NR == 2 {print $3, $4}')
        [ $# -eq 2 ] || return 1
        used=$1
        room=$(($1 + $2))
    fi
    [ "$room" -gt 0 ] && [ $((used * 100)) -ge $((room * DISK_ACT)) ]
}

request_snapshot() {
    put "$RUN_DIR/snapshot.request" "$1"
    REQUESTED_AT=$T
    log "snapshot requested ($1)"
}

deadline_due() {
    [ -n "$DEADLINE" ] && [ "$T" -ge "$DEADLINE" ] && [ "$LEASE_FRESH" = 0 ] || return 1
    if [ "$ENDED" = 1 ] && [ -s "$RUN_DIR/snapshot.json" ]; then
        # A snapshot ended the job: leave time to retrieve it.
        [ "$T" -ge $((DEADLINE + RETRIEVE_GRACE)) ]
        return
    fi
    if [ "$ENDED" = 0 ] && [ -n "$REQUESTED_AT" ] && [ $((T - REQUESTED_AT)) -lt "$SNAPSHOT_WAIT" ]; then
        return 1
    fi
    return 0
}

# One check; exit status 0 once the pod is deleted.
check() {
    T=$(now)
    STARTED=0
    ENDED=0
    if [ -f "$RUN_DIR/job.pid" ]; then
        STARTED=1
        pid=$(cat "$RUN_DIR/job.pid" 2>/dev/null)
        if [ -f "$RUN_DIR/exit_code" ] || [ -f "$RUN_DIR/cancelled" ]; then
            ENDED=1
        else
            case $pid in
                ''|*[!0-9]*) ENDED=1 ;;
                *) if [ "$pid" -le 1 ] || ! kill -s 0 -- -"$pid" 2>/dev/null; then ENDED=1; fi ;;
            esac
        fi
        if [ "$ENDED" = 1 ] && [ -z "$ENDED_AT" ]; then
            ENDED_AT=$T
            log "the job ended"
        fi
    fi
    LEASE_FRESH=0
    if [ -f "$POD_DIR/lease" ] && [ $((T - $(mtime "$POD_DIR/lease"))) -lt "$LEASE_TTL" ]; then
        LEASE_FRESH=1
    fi

    if [ "$STARTED" = 1 ] && [ "$ENDED" = 0 ] && [ ! -f "$RUN_DIR/snapshot.request" ]; then
        if [ "$KEEP" != 1 ] && [ -z "$REQUESTED_AT" ]; then
            if at=$(read_number "$POD_DIR/snapshot_at") && [ "$T" -ge "$at" ]; then
                request_snapshot cost
            elif [ -n "$DEADLINE" ] && [ "$T" -ge $((DEADLINE - SNAPSHOT_LEAD)) ] \
                && [ "$LEASE_FRESH" = 0 ]; then
                request_snapshot deadline
            fi
        fi
        if [ ! -f "$RUN_DIR/snapshot.request" ] && disk_full; then
            request_snapshot disk
        fi
    fi

    reason=
    if [ "$BOOT_FAILED" = 1 ]; then
        reason=bootstrap_failed
    elif [ "$KEEP" = 1 ] && [ "$STARTED" = 1 ]; then
        return 1
    elif at=$(read_number "$POD_DIR/cost_cap_at") && [ "$T" -ge "$at" ]; then
        reason=cost_cap
    elif deadline_due; then
        reason=deadline
    elif [ -f "$POD_DIR/retrieved" ]; then
        reason=retrieved
    elif [ -n "$ENDED_AT" ] && [ $((T - ENDED_AT)) -ge "$RETRIEVE_GRACE" ]; then
        reason=abandoned
    elif [ "$STARTED" = 0 ] && [ $((T - START)) -ge "$BOOT_GRACE" ]; then
        reason=never_started
    fi
    [ -n "$reason" ] || return 1
    delete_pod "$reason"
}

START=$(now)
ENDED_AT=
REQUESTED_AT=
if [ "$BOOT_FAILED" = 1 ]; then
    why=$(head -c 200 "$POD_DIR/bootstrap_failed" 2>/dev/null | tr -d '\n')
    verdict="failed bootstrap: ${why:-unknown}"
else
    verdict=$(probe)
fi
put "$POD_DIR/watchdog" "$verdict"
log "verdict: $verdict"
case $verdict in
    ready) ;;
    "failed bootstrap: "*) [ -n "${RUNPOD_API_KEY:-}" ] || exit 1 ;;
    *) log "this watchdog cannot delete its pod: overbrainer deletes it"; exit 1 ;;
esac
log "watching $RUN_DIR every ${INTERVAL}s"
CHECKS=0
while :; do
    CHECKS=$((CHECKS + 1))
    put "$POD_DIR/checks" "$CHECKS"
    if check; then
        exit 0
    fi
    sleep "$INTERVAL"
done
