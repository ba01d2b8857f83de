#!/usr/bin/env bash
# keystone-standalone.sh — a REAL OpenStack Keystone (30.0.0) for caldera's tests, on loopback
# only, and the real Heat behind it (keystonemiddleware auth_token, trusts), registered in its
# catalog with public and internal endpoints in two regions.
#
#   scripts/keystone-standalone.sh install  # PostgreSQL + Heat venv (heat-standalone.sh install),
#                                           # venv target/keystone-venv (cached)
#   scripts/keystone-standalone.sh start    # install if needed, fresh DB, keys, bootstrap, start
#                                           # Keystone, create the test fixtures, start Heat
#                                           # behind it; last stdout lines:
#                                           #   KEYSTONE_URL=http://127.0.0.1:5000
#                                           #   HEAT_URL=http://127.0.0.1:8005/v1
#   scripts/keystone-standalone.sh stop     # stop Heat and Keystone (PostgreSQL keeps running)
#   scripts/keystone-standalone.sh env      # prints the export lines
#   scripts/keystone-standalone.sh status   # exit 0 if Keystone answers
#
# What runs: Keystone as KEYSTONE_WORKERS processes serving one socket, one request at a time
# each, as uwsgi runs it (scripts/keystone_standalone.py: the Flask WSGI app on the standard
# library's wsgiref server; why not threads: see that file), and ONE process for Heat (scripts/heat-standalone.sh with
# HEAT_KEYSTONE_URL, serving on 127.0.0.1-127.0.0.4 so each catalog endpoint is a distinct
# address). Fernet tokens; `keystone-manage db_sync`, `fernet_setup`, `credential_setup`,
# `bootstrap` (admin / admin project / RegionOne / identity endpoints), then
# scripts/keystone_fixtures.py (domain caldera-ops, users operator, disabled-operator, heat,
# regions RegionTwo and RegionThree, the orchestration endpoints; see that file).
#
# Environment knobs:
#   KEYSTONE_PORT (5000)               port on 127.0.0.1; another port gets its own run dir
#                                      (target/keystone-run-PORT) and database (keystone_PORT)
#   KEYSTONE_TOKEN_EXPIRATION (3600)   [token] expiration, seconds (the suite shortens it so
#                                      tokens expire during the tests)
#   KEYSTONE_ADMIN_PASSWORD, KEYSTONE_OPERATOR_PASSWORD, HEAT_SERVICE_PASSWORD  test passwords
#   KEYSTONE_WITH_HEAT (1)             0 = Keystone only
#   HEAT_PORT (8005)                   the Heat behind Keystone (HEAT_VENV etc. pass through)
#   KEYSTONE_VENV (target/keystone-venv), KEYSTONE_PYTHON (python3)
#   KEYSTONE_START_TIMEOUT (90)
#   KEYSTONE_WORKERS (3)               Keystone worker processes
#   KEYSTONE_DEBUG (0)                 1 = debug logging in keystone.log
# Files: target/keystone-run[-PORT]/{keystone.conf,keystone.log,keystone-stdout.log,
#        keystone.pid,fernet-keys,credential-keys,fixtures.env}.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/stop-pid.sh
. "$ROOT/scripts/stop-pid.sh"
# shellcheck source=scripts/lib/postgres.sh
. "$ROOT/scripts/lib/postgres.sh"
VENV="${KEYSTONE_VENV:-$ROOT/target/keystone-venv}"
PORT="${KEYSTONE_PORT:-5000}"
if [ "$PORT" = 5000 ]; then SUFFIX=""; else SUFFIX="-$PORT"; fi
RUN="${KEYSTONE_RUN_DIR:-$ROOT/target/keystone-run$SUFFIX}"
HOST=127.0.0.1
KEYSTONE_VERSION=30.0.0
# Keystone 30.0.0 resolves within Heat 27.0.1's frozen set (same oslo.*, keystonemiddleware,
# SQLAlchemy); the few packages only Keystone needs (Flask, pysaml2, ...) are frozen beside it.
CONSTRAINTS="$ROOT/scripts/heat-constraints.txt"
KS_CONSTRAINTS="$ROOT/scripts/keystone-constraints.txt"
STAMP="$VENV/.caldera-keystone-$KEYSTONE_VERSION"
PIDFILE="$RUN/keystone.pid"
URL="http://$HOST:$PORT"
DB_NAME="keystone${SUFFIX//-/_}"
DB_USER=keystone
DB_PASS=keystone
export HEAT_PORT="${HEAT_PORT:-8005}"
export KEYSTONE_ADMIN_PASSWORD="${KEYSTONE_ADMIN_PASSWORD:-caldera-admin-Secret-5d1}"
export KEYSTONE_OPERATOR_PASSWORD="${KEYSTONE_OPERATOR_PASSWORD:-caldera-operator-Secret-8e2}"
export HEAT_SERVICE_PASSWORD="${HEAT_SERVICE_PASSWORD:-caldera-heat-Secret-3c7}"
HEAT_BINDS="127.0.0.2 127.0.0.3 127.0.0.4"

log() { echo "keystone-standalone: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

as_postgres() { (cd / && runuser -u postgres -- "$@"); }

heat() {  # runs scripts/heat-standalone.sh for the Heat behind this Keystone
    HEAT_KEYSTONE_URL="$URL" HEAT_EXTRA_BINDS="$HEAT_BINDS" "$ROOT/scripts/heat-standalone.sh" "$@"
}

# ---------------------------------------------------------------- install
venv_ok() {
    [ -f "$STAMP" ] && [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c 'import keystone.server.wsgi, psycopg2' >/dev/null 2>&1
}

cmd_install() {
    local t0=$SECONDS
    # PostgreSQL from Debian and the Heat venv (Heat runs behind this Keystone).
    "$ROOT/scripts/heat-standalone.sh" install
    if venv_ok; then
        log "venv $VENV ok (keystone $KEYSTONE_VERSION)"
        return 0
    fi
    local py="${KEYSTONE_PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || py=/usr/bin/python3
    log "creating venv $VENV with $py ($("$py" --version 2>&1))"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$py" -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-input -c "$CONSTRAINTS" -c "$KS_CONSTRAINTS" \
        "keystone==$KEYSTONE_VERSION" psycopg2-binary >&2
    venv_ok_check=$("$VENV/bin/python" -c 'import keystone.server.wsgi, psycopg2; print("ok")' 2>&1) ||
        die "venv does not import keystone: $venv_ok_check"
    touch "$STAMP"
    log "installed in $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- postgres
reset_database() {
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qAt >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN PASSWORD '$DB_PASS';
  END IF;
END \$\$;
SQL
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null
    as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $DB_NAME OWNER $DB_USER" >/dev/null
}

# ---------------------------------------------------------------- keystone
write_conf() {
    cat >"$RUN/keystone.conf" <<EOF
# written by scripts/keystone-standalone.sh — regenerated on every start
[DEFAULT]
debug = $( [ "${KEYSTONE_DEBUG:-0}" = 1 ] && echo true || echo false )
log_dir = $RUN
log_file = keystone.log

[database]
connection = postgresql+psycopg2://$DB_USER:$DB_PASS@$HOST:$PG_PORT/$DB_NAME

[identity]
# bcrypt's minimum cost: every login (caldera's, the tests', and Heat's service user, which
# keystoneauth logs in again for each request when tokens live under its 120 s minimum)
# hashes the password; at the default cost a login takes 0.3-2 s of CPU on a busy 2-core
# machine, and the queue behind one Keystone process made tokens late enough to fail.
password_hash_rounds = 4

[token]
provider = fernet
expiration = ${KEYSTONE_TOKEN_EXPIRATION:-3600}

[fernet_tokens]
key_repository = $RUN/fernet-keys

[fernet_receipts]
key_repository = $RUN/fernet-keys

[credential]
key_repository = $RUN/credential-keys

[cache]
enabled = false

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
EOF
}

manage() {  # keystone-manage with this configuration, output to $RUN/manage.log
    if ! "$VENV/bin/keystone-manage" --config-file "$RUN/keystone.conf" "$@" >>"$RUN/manage.log" 2>&1; then
        tail -n 30 "$RUN/manage.log" >&2
        die "keystone-manage $1 failed (log: $RUN/manage.log)"
    fi
}

keystone_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        grep -q keystone_standalone "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

http_code() {
    curl -s -o /dev/null -m 10 -w '%{http_code}' "$URL/v3" 2>/dev/null || true
}

stop_keystone() {
    local pid
    if pid="$(keystone_pid)"; then
        log "stopping Keystone (pid $pid)"
        stop_pid "$pid" 10
    fi
    rm -f "$PIDFILE"
}

cmd_stop() {
    if [ "${KEYSTONE_WITH_HEAT:-1}" = 1 ]; then heat stop || true; fi
    stop_keystone
}

cmd_start() {
    local t0=$SECONDS pid
    cmd_install
    keystone_pid >/dev/null && stop_keystone
    if [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$URL/" 2>/dev/null || true)" != 000 ]; then
        die "port $PORT on $HOST is already in use (set KEYSTONE_PORT)"
    fi
    mkdir -p "$RUN"
    rm -rf "$RUN/fernet-keys" "$RUN/credential-keys"
    : >"$RUN/manage.log"
    ensure_postgres
    reset_database
    write_conf
    log "keystone-manage db_sync, fernet_setup, credential_setup, bootstrap"
    manage db_sync
    local me
    me="$(id -un)"
    manage fernet_setup --keystone-user "$me" --keystone-group "$(id -gn)"
    manage credential_setup --keystone-user "$me" --keystone-group "$(id -gn)"
    manage bootstrap --bootstrap-password "$KEYSTONE_ADMIN_PASSWORD" \
        --bootstrap-admin-url "$URL/v3/" --bootstrap-internal-url "$URL/v3/" \
        --bootstrap-public-url "$URL/v3/" --bootstrap-region-id RegionOne
    : >"$RUN/keystone.log"
    log "starting Keystone on $HOST:$PORT (token expiration ${KEYSTONE_TOKEN_EXPIRATION:-3600} s)"
    "$VENV/bin/python" "$ROOT/scripts/keystone_standalone.py" \
        --config-file "$RUN/keystone.conf" --bind "$HOST" --port "$PORT" --pid-file "$PIDFILE" \
        </dev/null >"$RUN/keystone-stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    local deadline=$((SECONDS + ${KEYSTONE_START_TIMEOUT:-90}))
    while [ "$(http_code)" != 200 ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$RUN/keystone-stdout.log" "$RUN/keystone.log" >&2 || true
            rm -f "$PIDFILE"
            die "Keystone failed to start"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 30 "$RUN/keystone-stdout.log" "$RUN/keystone.log" >&2 || true
            stop_keystone
            die "Keystone did not become ready"
        fi
        sleep 0.3
    done
    log "Keystone ready (pid $pid) in $((SECONDS - t0)) s; creating fixtures"
    "$VENV/bin/python" "$ROOT/scripts/keystone_fixtures.py" "$URL" "$HEAT_PORT" >"$RUN/fixtures.env" ||
        { stop_keystone; die "fixtures failed"; }
    if [ "${KEYSTONE_WITH_HEAT:-1}" = 1 ]; then
        heat start >"$RUN/heat-start.log" || {
            tail -n 20 "$RUN/heat-start.log" >&2
            stop_keystone
            die "Heat behind Keystone failed to start"
        }
    fi
    log "ready in $((SECONDS - t0)) s; log $RUN/keystone.log"
    cat "$RUN/fixtures.env"
    echo "KEYSTONE_URL=$URL"
    if [ "${KEYSTONE_WITH_HEAT:-1}" = 1 ]; then echo "HEAT_URL=http://$HOST:$HEAT_PORT/v1"; fi
}

cmd_status() {
    local pid
    if pid="$(keystone_pid)" && [ "$(http_code)" = 200 ]; then
        echo "running pid=$pid KEYSTONE_URL=$URL"
        return 0
    fi
    echo "not running"
    return 1
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    env)
        echo "export KEYSTONE_URL=$URL HEAT_URL=http://$HOST:$HEAT_PORT/v1"
        echo "export KEYSTONE_ADMIN_PASSWORD=$KEYSTONE_ADMIN_PASSWORD KEYSTONE_OPERATOR_PASSWORD=$KEYSTONE_OPERATOR_PASSWORD"
        ;;
    status) cmd_status ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
