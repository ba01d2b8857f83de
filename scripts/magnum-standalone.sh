#!/usr/bin/env bash
# magnum-standalone.sh — a REAL OpenStack Magnum (PyPI magnum, MAGNUM_VERSION 22.0.0: the last
# release that still ships the Heat driver k8s_fedora_coreos_v1) behind the Keystone and Heat
# of scripts/keystone-standalone.sh, on loopback only. scripts/real-magnum-suite.sh
# (CI) starts it on the ports below.
#
#   KEYSTONE_PORT=5100 HEAT_PORT=8105 scripts/keystone-standalone.sh start   # first
#   scripts/magnum-standalone.sh install  # MariaDB (apt) + venv target/magnum-venv-VERSION
#   scripts/magnum-standalone.sh start    # install if needed, fresh DB, `magnum-db-manage
#                                         # upgrade`, Keystone fixtures, magnum.conf, start;
#                                         # last stdout line: MAGNUM_URL=http://127.0.0.1:9611/v1
#   scripts/magnum-standalone.sh stop
#   scripts/magnum-standalone.sh status
#
# What runs: ONE Python process, scripts/magnum_standalone.py serve: Magnum's conductor (RPC
# over oslo.messaging fake://, periodic status sync with Heat) and Magnum's API paste app
# (keystonemiddleware auth_token against Keystone) on eventlet. The cluster driver is
# scripts/magnum_test_driver (Magnum's k8s_fedora_coreos_v1 with server-free Heat templates);
# Glance/Nova/Neutron are in-memory stand-ins answering Magnum's validators (see the .py).
# Why MariaDB and not the PostgreSQL Heat uses: Magnum's migration c04e925e65c2 runs
# `UPDATE nodegroup INNER JOIN cluster ...`, MySQL-only SQL (scripts/magnum-probe.sh).
#
# Environment knobs:
#   MAGNUM_KEYSTONE_URL (http://127.0.0.1:$KEYSTONE_PORT, KEYSTONE_PORT default 5100)
#   MAGNUM_PORT (9611)                port on 127.0.0.1
#   MAGNUM_VERSION (22.0.0), MAGNUM_VENV (target/magnum-venv-22)
#   MAGNUM_DB (magnum_standalone)     MariaDB database and user
#   KEYSTONE_ADMIN_PASSWORD           as in keystone-standalone.sh
#   MAGNUM_SERVICE_PASSWORD, MAGNUM_DOMAIN_ADMIN_PASSWORD   test passwords
#   MAGNUM_DEBUG (0), MAGNUM_START_TIMEOUT (90)
# Files: target/magnum-run/{magnum.conf,magnum.log,magnum-stdout.log,magnum.pid,db-manage.log}.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/stop-pid.sh
. "$ROOT/scripts/stop-pid.sh"
VERSION="${MAGNUM_VERSION:-22.0.0}"
VENV="${MAGNUM_VENV:-$ROOT/target/magnum-venv-${VERSION%%.*}}"
RUN="${MAGNUM_RUN_DIR:-$ROOT/target/magnum-run}"
HOST=127.0.0.1
PORT="${MAGNUM_PORT:-9611}"
URL="http://$HOST:$PORT"
KEYSTONE_URL="${MAGNUM_KEYSTONE_URL:-http://127.0.0.1:${KEYSTONE_PORT:-5100}}"
DB="${MAGNUM_DB:-magnum_standalone}"
PIDFILE="$RUN/magnum.pid"
STAMP="$VENV/.caldera-magnum-$VERSION"
export KEYSTONE_ADMIN_PASSWORD="${KEYSTONE_ADMIN_PASSWORD:-caldera-admin-Secret-5d1}"
export MAGNUM_SERVICE_PASSWORD="${MAGNUM_SERVICE_PASSWORD:-caldera-magnum-Secret-4b9}"
export MAGNUM_DOMAIN_ADMIN_PASSWORD="${MAGNUM_DOMAIN_ADMIN_PASSWORD:-caldera-magnum-domain-Secret-7a3}"
export PYTHONWARNINGS=ignore

log() { echo "magnum-standalone: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- install
ensure_mariadb() {
    local i
    if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1; then
        log "installing mariadb-server (apt)"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >&2
    fi
    if ! mysqladmin ping >/dev/null 2>&1; then
        service mariadb start >&2 || true
    fi
    for i in $(seq 1 60); do
        mysqladmin ping >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "MariaDB does not answer"
}

cmd_install() {
    ensure_mariadb
    if [ -f "$STAMP" ] && "$VENV/bin/python" -c 'import magnum.drivers.heat, pymysql' >/dev/null 2>&1; then
        log "venv $VENV ok (magnum $VERSION)"
        return 0
    fi
    log "creating venv $VENV (magnum $VERSION, its own dependency resolution)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    local cons=()
    # Pinned for 22.0.0 only (another version resolves its own dependencies).
    if [ "$VERSION" = 22.0.0 ] && [ -f "$ROOT/scripts/magnum-constraints.txt" ]; then
        cons=(-c "$ROOT/scripts/magnum-constraints.txt")
    fi
    "$VENV/bin/pip" install -q --no-input "${cons[@]}" "magnum==$VERSION" PyMySQL >&2
    "$VENV/bin/python" -c 'import magnum.drivers.heat, pymysql' ||
        die "magnum $VERSION has no Heat driver (23.0.0 and later dropped it)"
    touch "$STAMP"
}

reset_database() {
    mysql -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB CHARACTER SET utf8mb4;
        CREATE USER IF NOT EXISTS '$DB'@'127.0.0.1' IDENTIFIED BY '$DB';
        GRANT ALL ON $DB.* TO '$DB'@'127.0.0.1'; FLUSH PRIVILEGES;"
}

write_conf() {
    local ks_common
    ks_common="auth_url = $KEYSTONE_URL
auth_type = password
username = magnum
password = $MAGNUM_SERVICE_PASSWORD
project_name = service
user_domain_id = default
project_domain_id = default"
    cat >"$RUN/magnum.conf" <<EOF
# written by scripts/magnum-standalone.sh — regenerated on every start
[DEFAULT]
debug = $( [ "${MAGNUM_DEBUG:-0}" = 1 ] && echo true || echo false )
log_dir = $RUN
log_file = magnum.log
host = caldera-magnum
transport_url = fake://
state_path = $RUN
periodic_interval_max = 5

[api]
host = $HOST
port = $PORT
api_paste_config = $VENV/etc/magnum/api-paste.ini

[database]
connection = mysql+pymysql://$DB:$DB@127.0.0.1/$DB?charset=utf8mb4

[oslo_concurrency]
lock_path = $RUN/lock

[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL/v3
$ks_common

[keystone_auth]
$ks_common

[trust]
trustee_domain_name = magnum
trustee_domain_admin_name = magnum_domain_admin
trustee_domain_admin_password = $MAGNUM_DOMAIN_ADMIN_PASSWORD
trustee_keystone_interface = public
cluster_user_trust = true

[certificates]
cert_manager_type = x509keypair

[heat_client]
region_name = RegionOne
endpoint_type = publicURL

[magnum_client]
region_name = RegionOne

[cinder_client]
region_name = RegionOne

[kubernetes]
# the health poll talks to the cluster's Kubernetes API: there is none
health_polling_interval = -1

[drivers]
disabled_drivers = k8s_fedora_coreos_v1
EOF
}

magnum_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        grep -q magnum_standalone "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

http_code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$URL/v1/" 2>/dev/null || true; }

cmd_stop() {
    local pid
    if pid="$(magnum_pid)"; then
        log "stopping Magnum (pid $pid)"
        stop_pid "$pid" 10
    fi
    rm -f "$PIDFILE"
}

cmd_start() {
    local t0=$SECONDS pid deadline
    cmd_install
    magnum_pid >/dev/null && cmd_stop
    [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$URL/" 2>/dev/null || true)" = 000 ] ||
        die "port $PORT on $HOST is already in use (set MAGNUM_PORT)"
    [ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$KEYSTONE_URL/v3" 2>/dev/null || true)" = 200 ] ||
        die "no Keystone at $KEYSTONE_URL (start scripts/keystone-standalone.sh first)"
    mkdir -p "$RUN/lock"
    reset_database
    write_conf
    log "magnum-db-manage upgrade"
    "$VENV/bin/magnum-db-manage" --config-file "$RUN/magnum.conf" upgrade >"$RUN/db-manage.log" 2>&1 ||
        { tail -n 20 "$RUN/db-manage.log" >&2; die "magnum-db-manage upgrade failed"; }
    log "Keystone fixtures (service user, trustee domain, container-infra endpoints)"
    python3 "$ROOT/scripts/magnum_standalone.py" fixtures "$KEYSTONE_URL" "$URL" >"$RUN/fixtures.env" ||
        die "fixtures failed"
    : >"$RUN/magnum.log"
    "$VENV/bin/python" "$ROOT/scripts/magnum_standalone.py" serve \
        --config-file "$RUN/magnum.conf" --pid-file "$PIDFILE" --work-dir "$RUN" \
        </dev/null >"$RUN/magnum-stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    deadline=$((SECONDS + ${MAGNUM_START_TIMEOUT:-90}))
    while [ "$(http_code)" != 200 ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$RUN/magnum-stdout.log" "$RUN/magnum.log" >&2 || true
            rm -f "$PIDFILE"
            die "Magnum failed to start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 30 "$RUN/magnum-stdout.log" "$RUN/magnum.log" >&2 || true
            cmd_stop
            die "Magnum did not become ready"
        fi
        sleep 0.3
    done
    log "ready (pid $pid) in $((SECONDS - t0)) s; log $RUN/magnum.log"
    cat "$RUN/fixtures.env"
    echo "MAGNUM_URL=$URL/v1"
}

cmd_status() {
    local pid
    if pid="$(magnum_pid)" && [ "$(http_code)" = 200 ]; then
        echo "running pid=$pid MAGNUM_URL=$URL/v1"
        return 0
    fi
    echo "not running"
    return 1
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
