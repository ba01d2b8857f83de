#!/usr/bin/env bash
# Runs caldera's tests against a real OpenStack Keystone and the real Heat behind it, on
# 127.0.0.1. Installs PostgreSQL (Debian), Heat and Keystone (PyPI, venvs cached under
# target/) when missing, starts Keystone (KEYSTONE_PORT, 5000) with a short token lifetime
# and Heat behind it (HEAT_PORT, 8005: not CI's no-auth Heat on 8004), runs the tests of
# tests/real_keystone/ with `--ignored`, and stops both afterwards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export KEYSTONE_PORT="${KEYSTONE_PORT:-5000}"
export HEAT_PORT="${HEAT_PORT:-8005}"
export HEAT_LEAF_DELAY="${HEAT_LEAF_DELAY:-0}"
# Tokens live 20 s, so they expire in the middle of the tests (the follow test spans about
# 2.5 lifetimes) and caldera has to renew them.
export KEYSTONE_TOKEN_EXPIRATION="${KEYSTONE_TOKEN_EXPIRATION:-20}"

scripts/keystone-standalone.sh install
trap 'scripts/keystone-standalone.sh stop >/dev/null 2>&1 || true' EXIT
out="$(scripts/keystone-standalone.sh start)"
line() { printf '%s\n' "$out" | grep "^$1=" | tail -n 1 | cut -d= -f2-; }
export KEYSTONE_URL="$(line KEYSTONE_URL)"
export HEAT_URL="$(line HEAT_URL)"
eval "$(scripts/keystone-standalone.sh env)"
echo "real Keystone at $KEYSTONE_URL (tokens live ${KEYSTONE_TOKEN_EXPIRATION} s), Heat behind it at $HEAT_URL"

# The `real_keystone` test binary holds two suites, its modules `basics` and `actions`
# (tests/real_keystone/), each selected by name (every test's name starts with its module's).
suites=(basics actions)
# Most of the time goes to waiting (token lifetimes, Heat's resource waits): run the cases
# side by side, and the suites too (one process per suite, each with its own threads; the
# longest case of each spans two or more token lifetimes). Built once first, then
# each suite's output is kept apart and printed whole, in order.
cargo test --locked --test real_keystone --no-run
out_dir="$(mktemp -d)"
trap 'rm -rf "$out_dir"; scripts/keystone-standalone.sh stop >/dev/null 2>&1 || true' EXIT
pids=()
for s in "${suites[@]}"; do
  cargo test --locked --test real_keystone -- --ignored "$s::" \
    --test-threads="${REAL_KEYSTONE_THREADS:-4}" \
    >"$out_dir/$s.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!suites[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; fi
  echo "---------------- ${suites[$i]}"
  cat "$out_dir/${suites[$i]}.log"
done
exit "$failed"
