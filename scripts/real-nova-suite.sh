#!/usr/bin/env bash
# Runs caldera's tests against a real OpenStack Nova (34, fake virt driver) on 127.0.0.1, and
# a real Heat 27 (HEAT_PORT, 8134 here) making real servers on it.
# Installs PostgreSQL (Debian) and Nova + Placement (PyPI, venv cached under target/) when
# missing (scripts/nova-standalone.sh), starts Nova with a small `[api] max_limit` (so the
# paging test pages past it), runs the tests of tests/real_nova/ with `--ignored`, and stops
# Nova afterwards. Stood in: Glance (two fixed images) and Neutron (empty answers: no server
# has an address) — scripts/nova_standins.py.
# Measured on the 2-core machine (test binary already built): 27-29 s with the venv cached
# (Nova start 5-7 s, the three tests 11-12 s, stop), 68 s with a fresh venv (pip 41 s, its
# download cache warm; scripts/nova-standalone.sh measured 2 min 37 s cold under load).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Nova caps every page at max_limit; the paging test boots 2 * max_limit + 1 servers.
export NOVA_MAX_LIMIT="${NOVA_MAX_LIMIT:-3}"

scripts/nova-standalone.sh install
export HEAT_PORT="${NOVA_SUITE_HEAT_PORT:-8134}"
trap 'scripts/heat-standalone.sh stop >/dev/null 2>&1 || true; scripts/nova-standalone.sh stop >/dev/null 2>&1 || true' EXIT
url_line="$(scripts/nova-standalone.sh start | grep '^NOVA_URL=' | tail -n 1)"
export NOVA_URL="${url_line#NOVA_URL=}"
echo "real Nova at $NOVA_URL (max_limit $NOVA_MAX_LIMIT)"

# Heat on this Nova: its noauth middleware hands every request a token body whose catalog
# names this Nova and the stand-in Glance and Neutron; Heat passes the request's
# X-Auth-Token on to them (caldera's --auth-token, the tests' `admin:admin`).
mkdir -p target
scripts/nova-standalone.sh token-response "$ROOT/target/nova-token.json"
heat_line="$(HEAT_ACTION_RETRY_LIMIT=0 HEAT_NOAUTH_TOKEN_RESPONSE="$ROOT/target/nova-token.json" scripts/heat-standalone.sh start | grep '^HEAT_URL=' | tail -n 1)"
export HEAT_URL="${heat_line#HEAT_URL=}"
echo "real Heat on it at $HEAT_URL"

# The real-Nova tests (the `real_nova` test binary) are #[ignore]d in a plain `cargo test`;
# --ignored runs exactly them. Two threads: one Nova process (one compute host) on 2 cores.
# Arguments pass on to the test binary (a name filter: `scripts/real-nova-suite.sh replaces`).
cargo test --locked --test real_nova -- --ignored --test-threads=2 "$@"
