# stop-pid.sh — sourced by the *-standalone.sh scripts: one way to stop a service they started.
#
#   stop_pid PID SECONDS   SIGTERM, then up to SECONDS for it to go, then SIGKILL;
#                          says so on stderr when it had to kill.
stop_pid() {
    local pid="$1" secs="$2" i
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 $((secs * 4))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "pid $pid still alive after $secs s: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
}
