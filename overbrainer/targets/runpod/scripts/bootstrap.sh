# overbrainer's pod bootstrap (reference-training §7.7). POSIX sh functions; the command the
# pod runs appends write_watchdog (the watchdog script as a heredoc) and a call to
# bootstrap_main. It claims the run directory, makes the pod's own SSH host key, installs the
# client's public key, writes the job's environment, restarts sshd, prints the host public key
# on its own line of the container log (the client reads it through Runpod's log API; the
# private half never leaves the pod) and becomes the watchdog.
set -eu
umask 077

ETC_DIR=${OVERBRAINER_ETC_DIR:-/etc/overbrainer}
SSH_ETC_DIR=${OVERBRAINER_SSH_ETC_DIR:-/etc/ssh}
ROOT_HOME=${OVERBRAINER_ROOT_HOME:-/root}
CUDA_ENV=${OVERBRAINER_CUDA_ENV:-/workspace/axolotl/scripts/cuda13_env.sh}
SSHD_RESTART=${OVERBRAINER_SSHD_RESTART:-service ssh restart}

log() {
    line="$(date -u +%Y-%m-%dT%H:%M:%SZ) $*"
    printf '%s\n' "$line"
    if [ -d "$OVERBRAINER_RUN_DIR/.pod" ]; then
        printf '%s\n' "$line" >> "$OVERBRAINER_RUN_DIR/.pod/bootstrap.log"
    fi
}

fail() {
    log "bootstrap failed: $1"
    mkdir -p "$OVERBRAINER_RUN_DIR/.pod"
    printf '%s\n' "$1" > "$OVERBRAINER_RUN_DIR/.pod/bootstrap_failed"
    if [ -f "$ETC_DIR/watchdog.sh" ]; then
        OVERBRAINER_BOOT_FAILED=1
        export OVERBRAINER_BOOT_FAILED OVERBRAINER_RUN_DIR
        exec sh "$ETC_DIR/watchdog.sh"
    fi
    exit 1
}

# $1 single-quoted for sh.
quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

install_watchdog() {
    mkdir -p "$ETC_DIR"
    write_watchdog > "$ETC_DIR/watchdog.sh.tmp"
    mv -f "$ETC_DIR/watchdog.sh.tmp" "$ETC_DIR/watchdog.sh"
}

claim_run_dir() {
    mkdir -p "$OVERBRAINER_RUN_DIR"
    if (set -C; printf '%s\n' "$OVERBRAINER_CLAIM" > "$OVERBRAINER_RUN_DIR/.claim") 2> /dev/null; then
        return 0
    fi
    [ "$(cat "$OVERBRAINER_RUN_DIR/.claim" 2> /dev/null)" = "$OVERBRAINER_CLAIM" ]
}

# A new host key, replacing the image's: made here, so its private half never leaves the pod.
make_host_key() {
    key=$SSH_ETC_DIR/ssh_host_ed25519_key
    { mkdir -p "$SSH_ETC_DIR" && rm -f "$SSH_ETC_DIR"/ssh_host_* \
        && ssh-keygen -q -t ed25519 -N '' -C "overbrainer-${OVERBRAINER_RUN_ID:-pod}" \
            -f "$key" < /dev/null > /dev/null 2>&1 && chmod 600 "$key"; } \
        || fail "cannot make the pod's SSH host key in $SSH_ETC_DIR"
}

# The one line the client looks for in the container log: `overbrainer-host-key <type> <key>`.
announce_host_key() {
    read -r kind blob _ < "$SSH_ETC_DIR/ssh_host_ed25519_key.pub" \
        || fail "cannot read the pod's SSH host public key"
    printf 'overbrainer-host-key %s %s\n' "$kind" "$blob"
}

install_authorized_key() {
    mkdir -p "$ROOT_HOME/.ssh"
    chmod 700 "$ROOT_HOME/.ssh"
    printf '%s\n' "$OVERBRAINER_AUTHORIZED_KEY" > "$ROOT_HOME/.ssh/authorized_keys"
    chmod 600 "$ROOT_HOME/.ssh/authorized_keys"
}

write_job_env() {
    if [ -f "$CUDA_ENV" ]; then
        # shellcheck disable=SC1090
        . "$CUDA_ENV" || fail "cannot source $CUDA_ENV"
    fi
    {
        printf 'export PATH=%s\n' "$(quote "$PATH")"
        if [ -n "${LD_LIBRARY_PATH:-}" ]; then
            printf 'export LD_LIBRARY_PATH=%s\n' "$(quote "$LD_LIBRARY_PATH")"
        fi
        printf 'export HF_HOME=%s\n' "$(quote "$OVERBRAINER_WORKDIR/.hf-cache")"
    } > "$ETC_DIR/job.env.tmp"
    chmod 644 "$ETC_DIR/job.env.tmp"
    mv -f "$ETC_DIR/job.env.tmp" "$ETC_DIR/job.env"
}

bootstrap_main() {
    : "${OVERBRAINER_RUN_DIR:?}" "${OVERBRAINER_WORKDIR:?}" "${OVERBRAINER_CLAIM:?}"
    : "${OVERBRAINER_AUTHORIZED_KEY:?}"
    if ! claim_run_dir; then
        OVERBRAINER_RUN_DIR=$ROOT_HOME/overbrainer-refused-run
        mkdir -p "$OVERBRAINER_RUN_DIR/.pod"
        install_watchdog
        fail "the run directory belongs to another run"
    fi
    mkdir -p "$OVERBRAINER_RUN_DIR/.pod"
    rm -f "$OVERBRAINER_RUN_DIR/.pod/watchdog"
    log "bootstrap of run ${OVERBRAINER_RUN_ID:-?} (overbrainer ${OVERBRAINER_VERSION:-?})"
    install_watchdog
    make_host_key
    install_authorized_key
    write_job_env
    unset OVERBRAINER_AUTHORIZED_KEY
    sh -c "$SSHD_RESTART" > /dev/null 2>&1 || fail "sshd did not restart"
    log "sshd restarted with the pod's own host key: starting the watchdog"
    announce_host_key
    exec sh "$ETC_DIR/watchdog.sh"
}
