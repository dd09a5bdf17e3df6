# overbrainer's pod bootstrap (reference-training §7.7). POSIX sh functions; the command the
# pod runs appends write_watchdog (the watchdog script as a heredoc) and a call to
# bootstrap_main. It claims the run directory, installs the run's host key and the client's
# public key, writes the job's environment, restarts sshd and becomes the watchdog.
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

install_host_key() {
    case ${OVERBRAINER_HOST_KEY:-} in
        ''|*RUNPOD_SECRET_*) fail "the pod has no host key (its Runpod secret was not given to it)" ;;
    esac
    mkdir -p "$SSH_ETC_DIR"
    rm -f "$SSH_ETC_DIR"/ssh_host_*
    key=$SSH_ETC_DIR/ssh_host_ed25519_key
    printf '%s' "$OVERBRAINER_HOST_KEY" | base64 -d > "$key" 2> /dev/null \
        || fail "the host key is not valid base64"
    chmod 600 "$key"
    ssh-keygen -y -f "$key" > "$key.pub" 2> /dev/null || fail "the host key is not an OpenSSH key"
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
    install_host_key
    install_authorized_key
    write_job_env
    unset OVERBRAINER_HOST_KEY OVERBRAINER_AUTHORIZED_KEY
    sh -c "$SSHD_RESTART" > /dev/null 2>&1 || fail "sshd did not restart"
    log "sshd restarted with the run's host key: starting the watchdog"
    exec sh "$ETC_DIR/watchdog.sh"
}
