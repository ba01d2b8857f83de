#!/usr/bin/env bash
# heat-standalone.sh — a REAL OpenStack Heat (27.0.1) for caldera's tests, on loopback only.
#
#   scripts/heat-standalone.sh install   # apt postgresql if missing; venv target/heat-venv (cached)
#   scripts/heat-standalone.sh start     # install if needed, fresh DB, start Heat; last stdout line:
#                                        #   HEAT_URL=http://127.0.0.1:8004/v1/admin
#   scripts/heat-standalone.sh stop      # stop Heat (PostgreSQL is left running; `stop --all`
#                                        #   also stops the PostgreSQL cluster)
#   scripts/heat-standalone.sh env       # prints: export HEAT_URL=http://127.0.0.1:8004/v1/admin
#   scripts/heat-standalone.sh status    # exit 0 if Heat answers, 1 otherwise
#   scripts/heat-standalone.sh size      # the running Heat's threads, memory and CPU seconds
#
#   eval "$(scripts/heat-standalone.sh start | grep '^HEAT_URL=')"; export HEAT_URL
#
# What runs: ONE Python process (scripts/heat_standalone.py) holding the Heat engine service
# (EngineService + convergence worker) and the Heat v1 API (paste app `heat-api`, flavor
# `noauth`, served by a threaded wsgiref server). `transport_url = fake://` (in-memory RPC) is why
# it must be one process. No Keystone: any request is accepted; headers X-Auth-User /
# X-Auth-Project (default `admin`) choose the identity; the project in URLs is `admin`.
# DB: the Debian PostgreSQL cluster (localhost only), role/db `heat`; `start` drops and recreates
# the `heat` database each time (clean state) unless HEAT_KEEP_DB=1.
#
# Environment knobs:
#   HEAT_PORT (8004)          API port on 127.0.0.1; another port gets its own run dir
#                             (target/heat-run-PORT) and database (heat_PORT)
#   HEAT_MAX_EVENTS (1000)    [DEFAULT] max_events_per_stack
#   HEAT_EVENT_PURGE_BATCH (200)  [DEFAULT] event_purge_batch_size. Heat (heat/db/api.py
#                             `event_create`) counts a stack's events only when
#                             2/batch > random.uniform(0, 1), and when the count has reached
#                             max_events_per_stack deletes that stack's `batch` oldest events
#                             (lowest ids) before writing the new one. 1 or 2 makes the check
#                             always pass: a stack then keeps its newest
#                             max_events_per_stack - 1 .. max_events_per_stack events, as
#                             long as its events are written one at a time (inserts that
#                             race delete the same oldest rows and the count overshoots:
#                             use HEAT_LEAF_DELAY > 0; tests/real_heat/purged_hooks.rs)
#   HEAT_STACK_TIMEOUT (1800) [DEFAULT] stack_action_timeout, seconds
#   HEAT_ACTION_RETRY_LIMIT (5)  [DEFAULT] action_retry_limit: how often Heat deletes a server
#                             that went to ERROR and creates it again before the resource
#                             fails (0: fail at the first ERROR, in seconds not minutes)
#   HEAT_START_TIMEOUT (120)  seconds to wait for the API to answer 200
#   HEAT_KEEP_DB (0)          1 = keep the existing `heat` database on start
#   HEAT_DEBUG (0)            1 = debug logging in target/heat-run/heat.log
#   HEAT_PYTHON (python3)     interpreter used to create the venv
#   HEAT_VENV (target/heat-venv)  where the venv lives
#   HEAT_RUN_DIR (target/heat-run[-PORT])  conf, logs and pid file
#   HEAT_LEAF_DELAY (1)       seconds between the leaf resources a traversal starts: stock
#                             Heat 27 sleeps 1 s after each, so a group of N starts its
#                             members one per second; 0 starts them all at once (faster;
#                             scripts/real-heat-suite.sh uses 0)
#   HEAT_RPC_THREADS (1000)   executor_thread_pool_size (see heat.conf comment)
#   HEAT_KEYSTONE_URL ()      Keystone root (e.g. http://127.0.0.1:5000): Heat authenticates
#                             requests through it (keystonemiddleware auth_token, deferred auth
#                             by trusts) instead of no-auth; the service user HEAT_SERVICE_USER
#                             (heat) / HEAT_SERVICE_PASSWORD in project `service`, domain
#                             `default`, must exist (scripts/keystone-standalone.sh makes it).
#                             HEAT_URL is then http://127.0.0.1:PORT/v1 (projects from tokens).
#   HEAT_NOAUTH_TOKEN_RESPONSE ()  no-auth mode only: a Keystone v3 token body (JSON file) that
#                             Heat's noauth middleware hands every request as its token info
#                             ([noauth] token_response), so its service catalog is where the
#                             engine finds Nova, Glance, Neutron (scripts/nova-standalone.sh
#                             token-response writes one for the real Nova)
#   HEAT_EXTRA_BINDS ()       more loopback addresses (e.g. "127.0.0.2 127.0.0.3") serving the
#                             same API on the same port: distinct catalog endpoints
# Files: target/heat-venv (venv, reused while it imports heat 27.0.1 + psycopg2),
#        target/heat-run/{heat.conf,heat.log,heat-stdout.log,heat.pid,db-sync.log}.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/stop-pid.sh
. "$ROOT/scripts/stop-pid.sh"
# shellcheck source=scripts/lib/postgres.sh
. "$ROOT/scripts/lib/postgres.sh"
VENV="${HEAT_VENV:-$ROOT/target/heat-venv}"
PORT="${HEAT_PORT:-8004}"
# Instances on other ports get their own run dir and database, so several can run at once.
if [ "$PORT" = 8004 ]; then SUFFIX=""; else SUFFIX="-$PORT"; fi
RUN="${HEAT_RUN_DIR:-$ROOT/target/heat-run$SUFFIX}"
HOST=127.0.0.1
HEAT_VERSION=27.0.1
CONSTRAINTS="$ROOT/scripts/heat-constraints.txt"
STAMP="$VENV/.caldera-heat-$HEAT_VERSION"
PIDFILE="$RUN/heat.pid"
KEYSTONE_URL="${HEAT_KEYSTONE_URL:-}"
if [ -n "$KEYSTONE_URL" ]; then URL="http://$HOST:$PORT/v1"; else URL="http://$HOST:$PORT/v1/admin"; fi
DB_NAME="heat${SUFFIX//-/_}"
DB_USER=heat
DB_PASS=heat

log() { echo "heat-standalone: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# ---------------------------------------------------------------- install
venv_ok() {
    [ -f "$STAMP" ] && [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c 'import heat.engine.service, psycopg2, oslo_service.backend' >/dev/null 2>&1
}

cmd_install() {
    local t0=$SECONDS
    if ! pg_server_installed; then
        log "installing PostgreSQL (apt)"
        apt_install postgresql
    fi
    if venv_ok; then
        log "venv $VENV ok (openstack-heat $HEAT_VERSION)"
        return 0
    fi
    local py="${HEAT_PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || py=/usr/bin/python3
    if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        log "installing python3-venv (apt)"
        apt_install python3-venv
        py=/usr/bin/python3
    fi
    log "creating venv $VENV with $py ($("$py" --version 2>&1))"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$py" -m venv "$VENV"
    local cons=()
    [ -f "$CONSTRAINTS" ] && cons=(-c "$CONSTRAINTS")
    "$VENV/bin/pip" install -q --no-input "${cons[@]}" "openstack-heat==$HEAT_VERSION" psycopg2-binary >&2
    venv_ok_check=$("$VENV/bin/python" -c 'import heat.engine.service, psycopg2; print("ok")' 2>&1) ||
        die "venv does not import heat: $venv_ok_check"
    touch "$STAMP"
    log "installed in $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- postgres
reset_database() {
    local exists
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qAt >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASS';
  END IF;
END \$\$;
SQL
    exists="$(as_postgres psql -p "$PG_PORT" -Atqc "select 1 from pg_database where datname='$DB_NAME'")"
    if [ "${HEAT_KEEP_DB:-0}" = 1 ] && [ "$exists" = 1 ]; then
        return 0
    fi
    if [ "$exists" = 1 ]; then
        as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qc "DROP DATABASE $DB_NAME WITH (FORCE)" >/dev/null
    fi
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $DB_NAME OWNER $DB_USER" >/dev/null
}

# ---------------------------------------------------------------- heat
write_conf() {
    local debug=false
    [ "${HEAT_DEBUG:-0}" = 1 ] && debug=true
    cat >"$RUN/heat.conf" <<EOF
# written by scripts/heat-standalone.sh — regenerated on every start
[DEFAULT]
debug = $debug
log_dir = $RUN
log_file = heat.log
host = caldera-heat
# in-memory RPC: API and engine live in one process (scripts/heat_standalone.py)
transport_url = fake://
rpc_response_timeout = 600
# Every in-progress resource check holds an RPC executor thread while it
# waits (a nested-stack member waits for its whole nested stack), so a small
# pool deadlocks big groups: 64 threads all held by group members whose own
# resources then never get a thread. (futurist grows each of the 3 RPC pools
# towards its maximum and never shrinks it; idle threads cost little memory.)
executor_thread_pool_size = ${HEAT_RPC_THREADS:-1000}
num_engine_workers = 1
convergence_engine = true
$(auth_default_conf)
heat_metadata_server_url = http://$HOST:8000
heat_waitcondition_server_url = http://$HOST:8000/v1/waitcondition
# limits for big nested test stacks
max_resources_per_stack = -1
max_stacks_per_tenant = -1
max_events_per_stack = ${HEAT_MAX_EVENTS:-1000}
action_retry_limit = ${HEAT_ACTION_RETRY_LIMIT:-5}
event_purge_batch_size = ${HEAT_EVENT_PURGE_BATCH:-200}
max_json_body_size = 16777216
max_template_size = 4194304
stack_action_timeout = ${HEAT_STACK_TIMEOUT:-1800}
periodic_interval = 60

[database]
connection = postgresql+psycopg2://$DB_USER:$DB_PASS@$HOST:$PG_PORT/$DB_NAME
# heat_standalone.py keeps these (stock Heat raises max_overflow to
# executor_thread_pool_size, which would exceed PostgreSQL's max_connections).
max_pool_size = 20
max_overflow = 50
pool_timeout = 120

[paste_deploy]
$( [ -n "$KEYSTONE_URL" ] || echo "flavor = noauth" )
api_paste_config = $VENV/etc/heat/api-paste.ini
$(auth_sections_conf)

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false

[oslo_messaging_notifications]
driver = noop
$(noauth_conf)
EOF
}

# [noauth] token_response (HEAT_NOAUTH_TOKEN_RESPONSE) in no-auth mode.
noauth_conf() {
    [ -z "$KEYSTONE_URL" ] && [ -n "${HEAT_NOAUTH_TOKEN_RESPONSE:-}" ] || return 0
    printf '\n[noauth]\ntoken_response = %s\n' "$HEAT_NOAUTH_TOKEN_RESPONSE"
}

# [DEFAULT] lines for the auth mode: no Keystone (fake client), or the real one.
auth_default_conf() {
    if [ -z "$KEYSTONE_URL" ]; then
        cat <<EOF
# no Keystone
deferred_auth_method = password
keystone_backend = heat.engine.clients.os.keystone.fake_keystoneclient.FakeKeystoneClient
EOF
    else
        cat <<EOF
# behind Keystone $KEYSTONE_URL: stack operations the engine does later run on a trust
# from the stack's owner to the heat service user
deferred_auth_method = trusts
reauthentication_auth_method = trusts
region_name_for_services = RegionOne
auth_encryption_key = caldera-test-auth-encryption-key
EOF
    fi
}

# [keystone_authtoken], [trustee], [clients_keystone] when behind Keystone.
auth_sections_conf() {
    [ -n "$KEYSTONE_URL" ] || return 0
    local user="${HEAT_SERVICE_USER:-heat}" pass="${HEAT_SERVICE_PASSWORD:-heat-service-secret}"
    cat <<EOF

[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL/v3
auth_url = $KEYSTONE_URL
auth_type = password
username = $user
password = $pass
user_domain_id = default
project_name = service
project_domain_id = default
interface = public
# lets the middleware check application credentials' access rules (else it refuses them)
service_type = orchestration

[trustee]
auth_type = password
auth_url = $KEYSTONE_URL
username = $user
password = $pass
user_domain_id = default

[clients_keystone]
auth_uri = $KEYSTONE_URL

[ec2authtoken]
auth_uri = $KEYSTONE_URL/v3
EOF
}

heat_pid() {  # prints the pid if the pid file names a live heat_standalone.py process
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        grep -q heat_standalone "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

# Behind Keystone a request without a token answers 401 once the API is up (the engine
# starts before the API in heat_standalone.py); without Keystone /stacks answers 200.
READY_CODE=200
[ -n "$KEYSTONE_URL" ] && READY_CODE=401
http_code() {
    local url="$URL/stacks"
    [ -n "$KEYSTONE_URL" ] && url="$URL/caldera-probe/stacks"
    curl -s -o /dev/null -m 10 -w '%{http_code}' "$url" 2>/dev/null || true
}

extra_bind_args() {
    local a
    for a in ${HEAT_EXTRA_BINDS:-}; do
        case "$a" in
            127.*) printf -- '--extra-bind %s ' "$a" ;;
            *) die "HEAT_EXTRA_BINDS: $a is not a loopback address" ;;
        esac
    done
}

cmd_stop() {
    local pid
    if pid="$(heat_pid)"; then
        log "stopping Heat (pid $pid)"
        stop_pid "$pid" 15
    else
        log "Heat is not running"
    fi
    rm -f "$PIDFILE"
    if [ "${1:-}" = --all ] && pg_server_installed; then
        local ver name port status
        read -r ver name port status <<<"$(pg_cluster)"
        if [ "${status:-}" = online ]; then
            log "stopping PostgreSQL $ver/$name"
            pg_ctlcluster "$ver" "$name" stop >&2 || true
        fi
    fi
}

cmd_start() {
    local t0=$SECONDS pid
    cmd_install
    heat_pid >/dev/null && cmd_stop
    # something else on the port?
    if [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$HOST:$PORT/" 2>/dev/null || true)" != 000 ]; then
        die "port $PORT on $HOST is already in use (set HEAT_PORT)"
    fi
    mkdir -p "$RUN"
    ensure_postgres
    reset_database
    write_conf
    log "heat-manage db_sync"
    if ! "$VENV/bin/heat-manage" --config-file "$RUN/heat.conf" db_sync >"$RUN/db-sync.log" 2>&1; then
        tail -n 30 "$RUN/db-sync.log" >&2
        die "heat-manage db_sync failed (log: $RUN/db-sync.log)"
    fi
    : >"$RUN/heat.log"
    log "starting Heat on $HOST:$PORT"
    "$VENV/bin/python" "$ROOT/scripts/heat_standalone.py" \
        --config-file "$RUN/heat.conf" --bind "$HOST" --port "$PORT" --pid-file "$PIDFILE" \
        --leaf-trigger-delay "${HEAT_LEAF_DELAY:-1}" $(extra_bind_args) \
        </dev/null >"$RUN/heat-stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    local deadline=$((SECONDS + ${HEAT_START_TIMEOUT:-120})) code=000
    while :; do
        code="$(http_code)"
        [ "$code" = "$READY_CODE" ] && break
        if ! kill -0 "$pid" 2>/dev/null; then
            log "Heat process exited; last lines of $RUN/heat-stdout.log and heat.log:"
            tail -n 20 "$RUN/heat-stdout.log" >&2 || true
            tail -n 40 "$RUN/heat.log" >&2 || true
            rm -f "$PIDFILE"
            die "Heat failed to start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "GET $URL/stacks still answers $code after ${HEAT_START_TIMEOUT:-120} s; log tail:"
            tail -n 20 "$RUN/heat-stdout.log" >&2 || true
            tail -n 40 "$RUN/heat.log" >&2 || true
            cmd_stop
            die "Heat did not become ready"
        fi
        sleep 0.3
    done
    log "Heat ready (pid $pid) in $((SECONDS - t0)) s; log $RUN/heat.log"
    echo "HEAT_URL=$URL"
}

cmd_status() {
    local pid
    if pid="$(heat_pid)" && [ "$(http_code)" = "$READY_CODE" ]; then
        echo "running pid=$pid HEAT_URL=$URL"
        return 0
    fi
    echo "not running"
    return 1
}

# What the one process holds and has used: threads, resident memory, CPU seconds (user +
# system, /proc/PID/stat fields 14 and 15 in clock ticks). For the suites' logs: how busy
# Heat kept its core over a stage, and how far its thread pools grew.
cmd_size() {
    local pid ticks cpu
    pid="$(heat_pid)" || { echo "not running"; return 1; }
    ticks="$(getconf CLK_TCK)"
    cpu="$(awk -v t="$ticks" '{ sub(/^.*\) /, ""); printf "%.0f", ($12 + $13) / t }' "/proc/$pid/stat")"
    echo "pid $pid; $(grep -hE '^(Threads|VmRSS)' "/proc/$pid/status" | tr -s ' \t' ' ' |
        paste -sd ';' | sed 's/;/; /'); CPU ${cpu} s"
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) shift; cmd_stop "${1:-}" ;;
    env) echo "export HEAT_URL=$URL" ;;
    status) cmd_status ;;
    size) cmd_size ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
