#!/usr/bin/env bash
# magnum-probe.sh — reproduces why no real Magnum API runs in caldera's suite (the README's
# known differences, "Magnum"). Not part of CI: it takes a few minutes and proves a negative.
#
#   scripts/magnum-probe.sh      # installs PyPI magnum (MAGNUM_VERSION, 23.0.0) into
#                                # target/magnum-venv with Heat's constraints, then shows:
#   1. the cluster drivers it ships: `magnum-driver-manage list-drivers` and the
#      `magnum.drivers` entry points (none: the Heat driver left the package);
#   2. `magnum-db-manage upgrade` on a fresh PostgreSQL database (the one Heat and Keystone
#      use here): where the migrations stop.
# Exit 0 when both blockers are still there; 1 when either is gone (time to try again).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VERSION="${MAGNUM_VERSION:-23.0.0}"
VENV="${MAGNUM_VENV:-$ROOT/target/magnum-venv}"
RUN="$ROOT/target/magnum-probe"
DB=magnum_probe
mkdir -p "$RUN"
# eventlet's deprecation banner on every command buries what they print.
export PYTHONWARNINGS=ignore

# PostgreSQL as the Heat script installs and starts it (and its `heat` role).
scripts/heat-standalone.sh install >&2
read -r _ _ PG_PORT PG_STATUS _ < <(pg_lsclusters -h | head -n 1)
if [ "$PG_STATUS" != online ]; then
    pg_ctlcluster "$(pg_lsclusters -h | head -n 1 | cut -d' ' -f1)" main start
fi
if [ ! -x "$VENV/bin/magnum-db-manage" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-input -c scripts/heat-constraints.txt \
        "magnum==$VERSION" psycopg2-binary >&2
fi
echo "magnum $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("magnum"))')"

blockers=0
echo "== 1. cluster drivers"
drivers="$("$VENV/bin/magnum-driver-manage" list-drivers 2>/dev/null || true)"
echo "magnum-driver-manage list-drivers: ${drivers:-<nothing>}"
eps="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(" ".join(e.name for e in m.entry_points(group="magnum.drivers")))')"
echo "magnum.drivers entry points: ${eps:-<none>}"
echo "magnum/drivers/: $(ls "$("$VENV/bin/python" -c 'import magnum.drivers, os; print(os.path.dirname(magnum.drivers.__file__))')" | tr '\n' ' ')"
if [ -z "$eps" ]; then blockers=$((blockers + 1)); fi

echo "== 2. magnum-db-manage upgrade on PostgreSQL"
as_pg() { (cd / && runuser -u postgres -- psql -p "$PG_PORT" -qAt "$@"); }
as_pg -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
as_pg -c "DROP ROLE IF EXISTS $DB" >/dev/null 2>&1
as_pg -c "CREATE ROLE $DB LOGIN PASSWORD '$DB'" >/dev/null
as_pg -c "CREATE DATABASE $DB OWNER $DB" >/dev/null
cat >"$RUN/magnum.conf" <<CONF
[database]
connection = postgresql+psycopg2://$DB:$DB@127.0.0.1:$PG_PORT/$DB
CONF
if "$VENV/bin/magnum-db-manage" --config-file "$RUN/magnum.conf" upgrade >"$RUN/db-manage.log" 2>&1; then
    echo "upgrade succeeded"
else
    echo "upgrade failed after $(grep -c 'Running upgrade' "$RUN/db-manage.log") migrations, in:"
    grep 'Running upgrade' "$RUN/db-manage.log" | tail -n 1 | sed 's/.*Running upgrade/  /'
    grep -m 2 -E '^psycopg2|^LINE' "$RUN/db-manage.log" | sed 's/^/  /' 
    blockers=$((blockers + 1))
fi
as_pg -c "DROP DATABASE IF EXISTS $DB" >/dev/null
as_pg -c "DROP ROLE IF EXISTS $DB" >/dev/null
echo "blockers still there: $blockers of 2"
[ "$blockers" = 2 ]
