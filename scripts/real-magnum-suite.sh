#!/usr/bin/env bash
# Runs caldera's tests against a REAL OpenStack Magnum (22.0.0, scripts/magnum-standalone.sh:
# API + conductor, the server-free test driver keeping Magnum's Heat layout) behind a real
# Keystone and the real Heat (scripts/keystone-standalone.sh), all on 127.0.0.1, on ports of
# their own so the other suites can run beside it: Keystone KEYSTONE_PORT (5100), Heat
# HEAT_PORT (8105), Magnum MAGNUM_PORT (9611).
#
# Installs what is missing (PostgreSQL and MariaDB from apt; Heat, Keystone and Magnum venvs
# from PyPI, cached under target/), starts Keystone + Heat, then Magnum, runs
# the `real_magnum` test binary (tests/real_magnum/) with `--ignored`, and stops Magnum, Heat
# and Keystone afterwards (PostgreSQL and MariaDB keep running).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
t0=$SECONDS

export KEYSTONE_PORT="${KEYSTONE_PORT:-5100}"
export HEAT_PORT="${HEAT_PORT:-8105}"
export MAGNUM_PORT="${MAGNUM_PORT:-9611}"
export HEAT_LEAF_DELAY="${HEAT_LEAF_DELAY:-0}"
export MAGNUM_KEYSTONE_URL="http://127.0.0.1:$KEYSTONE_PORT"

stop_all() {
    scripts/magnum-standalone.sh stop >/dev/null 2>&1 || true
    scripts/keystone-standalone.sh stop >/dev/null 2>&1 || true
}

scripts/keystone-standalone.sh install
scripts/magnum-standalone.sh install
echo "installed in $((SECONDS - t0)) s"
trap stop_all EXIT
out="$(scripts/keystone-standalone.sh start)"
line() { printf '%s\n' "$out" | grep "^$1=" | tail -n 1 | cut -d= -f2-; }
export KEYSTONE_URL="$(line KEYSTONE_URL)"
export HEAT_URL="$(line HEAT_URL)"
eval "$(scripts/keystone-standalone.sh env)"
out="$(scripts/magnum-standalone.sh start)"
export MAGNUM_URL="$(line MAGNUM_URL)"
[ -n "$MAGNUM_URL" ] || { echo "Magnum did not say where it listens" >&2; exit 1; }
echo "real Keystone at $KEYSTONE_URL, Heat behind it at $HEAT_URL, Magnum at $MAGNUM_URL" \
    "(up $((SECONDS - t0)) s after the start)"

status=0
cargo test --locked --test real_magnum -- --ignored \
    --test-threads="${REAL_MAGNUM_THREADS:-2}" || status=$?
if [ "$status" != 0 ]; then
    echo "---------------- last lines of Magnum's log (target/magnum-run/magnum.log)"
    grep -E 'ERROR|Traceback|Exception' -A3 target/magnum-run/magnum.log 2>/dev/null | tail -n 40 || true
fi
echo "real-magnum-suite: $((SECONDS - t0)) s in all, exit $status"
exit "$status"
