#!/usr/bin/env bash
# nova-standalone.sh — a REAL OpenStack Nova (34.0.0, 2026.2) + Placement (16.0.0) for caldera's
# tests, on loopback only.
#
#   scripts/nova-standalone.sh install   # apt postgresql if missing; venv target/nova-venv (cached)
#   scripts/nova-standalone.sh start     # install if needed, fresh DBs and cells, start Nova; last
#                                        #   stdout line: NOVA_URL=http://127.0.0.1:8774/v2.1
#   scripts/nova-standalone.sh stop      # stop Nova (PostgreSQL is left running)
#   scripts/nova-standalone.sh env       # prints: export NOVA_URL=http://127.0.0.1:8774/v2.1
#   scripts/nova-standalone.sh status    # exit 0 if Nova answers, 1 otherwise
#   scripts/nova-standalone.sh smoke     # curl checks against a running Nova (scripts/nova-smoke.sh)
#   scripts/nova-standalone.sh token-response FILE  # writes a Keystone v3 token body whose
#                                        #   catalog names this Nova (compute), the stand-in
#                                        #   Glance (image) and Neutron (network): a no-auth Heat
#                                        #   reads it (HEAT_NOAUTH_TOKEN_RESPONSE=FILE
#                                        #   scripts/heat-standalone.sh start) to find them
#
# What runs: ONE Python process (scripts/nova_standalone.py), native threads (Nova 34's
# threading mode, no eventlet), holding
#   - nova-conductor, nova-scheduler and one nova-compute (host `caldera-nova`), as service
#     objects started in-process the way Nova's functional tests start them, talking over
#     `transport_url = fake://` (in-memory RPC: why it must be one process);
#   - the compute API (paste app `osapi_compute`, stock pipeline minus keystonemiddleware's
#     `authtoken`; Nova 34 has no `noauth2` any more, so a middleware of ours sets the
#     identity headers: `X-Auth-Token: user:project`, default admin:admin; user `admin` has
#     role admin) on :8774 — microversions up to Nova 34's maximum;
#   - Placement's WSGI app (its own config, `auth_strategy = noauth2`) on :8778;
#   - two stand-ins of our own (scripts/nova_standins.py), because Nova calls them even for
#     servers booted with `"networks": "none"` (microversion >= 2.37, which is how servers
#     must be booted here): a Glance on :9292 (the image schema, GET/POST/DELETE
#     /v2/images[/{id}]; two fixed images, caldera-image-a 2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a01
#     and caldera-image-b ...9a02) — Nova checks a server's image there on boot and proxies
#     GET /v2.1/images to it; and a Neutron on :9696 answering empty lists (ports, networks,
#     extensions, ...) — Nova lists a server's ports when it deletes it or a build fails.
#     No real networks: servers have no addresses. (A real Neutron was not tried: Nova needs
#     none of it for "networks": "none"; addresses would need ports our stand-in does not make.)
#   - the fake virt driver: scripts/nova_fake_driver.py CalderaFakeDriver = Nova's
#     fake.MediumFakeDriver whose spawn fails for a server with metadata key
#     `caldera_fail_spawn` or a name containing `fail-spawn` (then ERROR with a fault, as
#     `[scheduler] max_attempts = 1` leaves no reschedule). The fake driver's console output
#     is Nova's own ("FAKE CONSOLE OUTPUT\nANOTHER\nLAST LINE").
# DB: the Debian PostgreSQL cluster (localhost only), role `nova`, databases nova_api, nova
# (cell1), nova_cell0, placement — dropped and recreated on every start. The process itself
# then makes the schemas and cells v2 (`--setup-db`: placement-manage db sync; nova-manage
# api_db sync, cell_v2 map_cell0, cell_v2 create_cell cell1 fake://, db sync — the same
# commands, called in-process, as each nova-manage run costs ~7 s of imports here) and maps
# the compute host to cell1 (discover_hosts) once nova-compute is up.
# Measured on this 2-core machine while other jobs kept its load average at 11-12:
#   install 2 min 37 s (pip, constraints pinned); start 21 s (shell + PostgreSQL 5 s, then the
#   process 16 s: schemas and cells 10 s, conductor/scheduler/compute 2 s, API 1 s; 13 s on a
#   quieter moment); stop 6-8 s; scripts/nova-smoke.sh 13 s (a server ACTIVE 0.3-2 s after
#   its POST, a failed spawn ERROR after ~4 s).
#
# Environment knobs:
#   NOVA_PORT (8774)  PLACEMENT_PORT (8778)  NOVA_GLANCE_PORT (9292)  NOVA_NEUTRON_PORT (9696)
#   NOVA_MAX_LIMIT (1000)     [api] max_limit (osapi_max_limit): page size cap
#   NOVA_START_TIMEOUT (180)  seconds to wait for the API to answer
#   NOVA_DEBUG (0)            1 = debug logging in target/nova-run/nova.log
#   NOVA_VENV (target/nova-venv)  NOVA_RUN_DIR (target/nova-run)  NOVA_PYTHON (python3)
# Files: target/nova-run/{nova.conf,placement.conf,api-paste.ini,nova.log,nova-stdout.log,
#        nova.pid}.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/stop-pid.sh
. "$ROOT/scripts/stop-pid.sh"
# shellcheck source=scripts/lib/postgres.sh
. "$ROOT/scripts/lib/postgres.sh"
VENV="${NOVA_VENV:-$ROOT/target/nova-venv}"
RUN="${NOVA_RUN_DIR:-$ROOT/target/nova-run}"
HOST=127.0.0.1
PORT="${NOVA_PORT:-8774}"
PLACEMENT_PORT="${PLACEMENT_PORT:-8778}"
GLANCE_PORT="${NOVA_GLANCE_PORT:-9292}"
NEUTRON_PORT="${NOVA_NEUTRON_PORT:-9696}"
NOVA_VERSION=34.0.0
PLACEMENT_VERSION=16.0.0
CONSTRAINTS="$ROOT/scripts/nova-constraints.txt"
STAMP="$VENV/.caldera-nova-$NOVA_VERSION"
PIDFILE="$RUN/nova.pid"
URL="http://$HOST:$PORT/v2.1"
DB_USER=nova
DB_PASS=nova
export OS_NOVA_DISABLE_EVENTLET_PATCHING=1 PYTHONWARNINGS=ignore

log() { echo "nova-standalone: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_postgres() { (cd / && PGOPTIONS='-c client_min_messages=warning' runuser -u postgres -- "$@"); }

# ---------------------------------------------------------------- install
venv_ok() {
    [ -f "$STAMP" ] && [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c 'import nova, placement, psycopg2' >/dev/null 2>&1
}

cmd_install() {
    local t0=$SECONDS
    if ! pg_server_installed; then
        log "installing PostgreSQL (apt)"
        apt_install postgresql
    fi
    if venv_ok; then
        log "venv $VENV ok (nova $NOVA_VERSION, openstack-placement $PLACEMENT_VERSION)"
        return 0
    fi
    local py="${NOVA_PYTHON:-python3}"
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
    "$VENV/bin/pip" install -q --no-input "${cons[@]}" "nova==$NOVA_VERSION" \
        "openstack-placement==$PLACEMENT_VERSION" psycopg2-binary >&2
    local out
    out=$("$VENV/bin/python" -c 'import nova.service, placement.deploy, psycopg2; print("ok")' 2>&1) ||
        die "venv does not import nova: $out"
    touch "$STAMP"
    log "installed in $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- postgres
reset_databases() {
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qAt >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASS';
  END IF;
END \$\$;
SQL
    # one psql session (each runuser + psql costs about a second here); autocommit, so
    # DROP/CREATE DATABASE are allowed
    local sql="" db
    for db in nova_api nova nova_cell0 placement; do
        sql+="DROP DATABASE IF EXISTS $db WITH (FORCE); CREATE DATABASE $db OWNER $DB_USER;"$'\n'
    done
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qAt >/dev/null <<<"$sql"
}

db_url() { echo "postgresql+psycopg2://$DB_USER:$DB_PASS@$HOST:$PG_PORT/$1"; }

# ---------------------------------------------------------------- nova
write_conf() {
    local debug=false
    [ "${NOVA_DEBUG:-0}" = 1 ] && debug=true
    mkdir -p "$RUN/state" "$RUN/instances" "$RUN/lock"
    cat >"$RUN/nova.conf" <<EOF
# written by scripts/nova-standalone.sh — regenerated on every start
[DEFAULT]
debug = $debug
log_dir = $RUN
log_file = nova.log
host = caldera-nova
my_ip = $HOST
state_path = $RUN/state
instances_path = $RUN/instances
# in-memory RPC: every service lives in one process (scripts/nova_standalone.py)
transport_url = fake://
rpc_response_timeout = 120
compute_driver = caldera_fake.CalderaFakeDriver
# periodic resource-tracker updates; the fake driver's inventory never changes
update_resources_interval = 60
heal_instance_info_cache_interval = -1
instance_usage_audit = false
# one compute host: resizes stay on it
allow_resize_to_same_host = true
# The one fake host offers 2 vCPUs and 8 GiB (MediumFakeDriver); Placement's default
# ratios (4 x CPU, 1 x RAM) fit 8 servers of caldera.small, and the suite's tests, two at a
# time, boot more than that ("No valid host was found"). The fake driver runs nothing.
cpu_allocation_ratio = 64.0
ram_allocation_ratio = 16.0
disk_allocation_ratio = 16.0

[api]
max_limit = ${NOVA_MAX_LIMIT:-1000}

[api_database]
connection = $(db_url nova_api)

[database]
connection = $(db_url nova)
max_pool_size = 10
max_overflow = 20

[quota]
# more servers than Nova's default quotas (10 per project) allow: paging tests
driver = nova.quota.NoopQuotaDriver

[scheduler]
max_attempts = 1
discover_hosts_in_cells_interval = -1

[filter_scheduler]
enabled_filters = ComputeFilter,ImagePropertiesFilter

[placement]
auth_type = admin_token
endpoint = http://$HOST:$PLACEMENT_PORT
token = admin
region_name = RegionOne

[glance]
api_servers = http://$HOST:$GLANCE_PORT
num_retries = 0

[neutron]
auth_type = admin_token
endpoint = http://$HOST:$NEUTRON_PORT
token = admin
endpoint_override = http://$HOST:$NEUTRON_PORT
default_floating_pool = public

[cinder]
os_region_name = RegionOne

[vnc]
enabled = false

[spice]
enabled = false

[serial_console]
enabled = false

[oslo_concurrency]
lock_path = $RUN/lock

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false

[oslo_messaging_notifications]
driver = noop

[notifications]
notification_format = unversioned

[wsgi]
api_paste_config = $RUN/api-paste.ini
EOF
    cat >"$RUN/placement.conf" <<EOF
# written by scripts/nova-standalone.sh
[DEFAULT]
debug = $debug

[api]
auth_strategy = noauth2

[placement_database]
connection = $(db_url placement)

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
EOF
    # the stock paste file, without keystonemiddleware (nova_standalone.py sets the identity)
    sed -e 's/ authtoken keystonecontext / keystonecontext /' \
        "$VENV/etc/nova/api-paste.ini" >"$RUN/api-paste.ini"
    grep -q ' authtoken ' "$RUN/api-paste.ini" && die "could not take authtoken out of api-paste.ini"
    return 0
}

nova_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        grep -q nova_standalone "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

http_code() {
    curl -s -o /dev/null -m 10 -w '%{http_code}' "$URL/flavors" 2>/dev/null || true
}

cmd_stop() {
    local pid
    if pid="$(nova_pid)"; then
        log "stopping Nova (pid $pid)"
        stop_pid "$pid" 15
    else
        log "Nova is not running"
    fi
    rm -f "$PIDFILE"
}

cmd_start() {
    local t0=$SECONDS pid port t1
    cmd_install
    nova_pid >/dev/null && cmd_stop
    for port in "$PORT" "$PLACEMENT_PORT" "$GLANCE_PORT" "$NEUTRON_PORT"; do
        if [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$HOST:$port/" 2>/dev/null || true)" != 000 ]; then
            die "port $port on $HOST is already in use"
        fi
    done
    mkdir -p "$RUN"
    ensure_postgres
    reset_databases
    write_conf
    t1=$SECONDS
    : >"$RUN/nova.log"
    log "starting Nova on $HOST:$PORT (schemas and cells are made by the process)"
    "$VENV/bin/python" "$ROOT/scripts/nova_standalone.py" \
        --config-file "$RUN/nova.conf" --placement-config "$RUN/placement.conf" \
        --paste "$RUN/api-paste.ini" --bind "$HOST" --port "$PORT" \
        --placement-port "$PLACEMENT_PORT" --glance-port "$GLANCE_PORT" \
        --neutron-port "$NEUTRON_PORT" --pid-file "$PIDFILE" \
        --setup-db "$(db_url nova_cell0)" "$(db_url nova)" \
        </dev/null >"$RUN/nova-stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    local deadline=$((SECONDS + ${NOVA_START_TIMEOUT:-180})) code=000
    while :; do
        code="$(http_code)"
        [ "$code" = 200 ] && break
        if ! kill -0 "$pid" 2>/dev/null; then
            log "Nova process exited; last lines of $RUN/nova-stdout.log and nova.log:"
            tail -n 20 "$RUN/nova-stdout.log" >&2 || true
            tail -n 40 "$RUN/nova.log" >&2 || true
            rm -f "$PIDFILE"
            die "Nova failed to start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "GET $URL/flavors still answers $code after ${NOVA_START_TIMEOUT:-180} s; log tail:"
            tail -n 20 "$RUN/nova-stdout.log" >&2 || true
            tail -n 40 "$RUN/nova.log" >&2 || true
            cmd_stop
            die "Nova did not become ready"
        fi
        sleep 0.3
    done
    log "Nova ready (pid $pid) in $((SECONDS - t0)) s (process $((SECONDS - t1)) s); log $RUN/nova.log"
    echo "NOVA_URL=$URL"
}

cmd_status() {
    local pid
    if pid="$(nova_pid)" && [ "$(http_code)" = 200 ]; then
        echo "running pid=$pid NOVA_URL=$URL"
        return 0
    fi
    echo "not running"
    return 1
}

cmd_token_response() {
    local file="${1:?token-response FILE}"
    cat >"$file" <<EOF
{"token": {
  "methods": ["password"], "issued_at": "2026-01-01T00:00:00.000000Z",
  "expires_at": "2099-01-01T00:00:00.000000Z",
  "user": {"id": "admin", "name": "admin", "domain": {"id": "default", "name": "Default"}},
  "project": {"id": "admin", "name": "admin", "domain": {"id": "default", "name": "Default"}},
  "roles": [{"id": "admin", "name": "admin"}, {"id": "member", "name": "member"}],
  "catalog": [
    {"type": "compute", "name": "nova", "id": "caldera-nova", "endpoints": [
      {"id": "caldera-nova-public", "interface": "public", "region": "RegionOne",
       "region_id": "RegionOne", "url": "http://$HOST:$PORT/v2.1"}]},
    {"type": "image", "name": "glance", "id": "caldera-glance", "endpoints": [
      {"id": "caldera-glance-public", "interface": "public", "region": "RegionOne",
       "region_id": "RegionOne", "url": "http://$HOST:$GLANCE_PORT"}]},
    {"type": "network", "name": "neutron", "id": "caldera-neutron", "endpoints": [
      {"id": "caldera-neutron-public", "interface": "public", "region": "RegionOne",
       "region_id": "RegionOne", "url": "http://$HOST:$NEUTRON_PORT"}]}
  ]}}
EOF
}

case "${1:-}" in
    install) cmd_install ;;
    token-response) shift; cmd_token_response "$@" ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) echo "export NOVA_URL=$URL" ;;
    status) cmd_status ;;
    smoke) exec "$ROOT/scripts/nova-smoke.sh" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
