#!/usr/bin/env bash
# Runs caldera's tests against a real OpenStack Heat on 127.0.0.1.
# Installs PostgreSQL (Debian) and Heat (PyPI, venv cached under target/) when missing,
# starts Heat, runs every tests/real_heat*.rs with `--ignored` (the operator-action scenarios
# of tests/real_heat_actions.rs last), and stops Heat afterwards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Stock Heat waits 1 s after starting each leaf resource of a traversal, so every create or
# update of an N-member group paid N seconds before its last member even started (the scale
# scenario took 50 s with that delay, 15 s without). The tests check what Heat does, not its
# pacing: start the leaves at once unless the caller asks for the stock delay (HEAT_LEAF_DELAY=1).
export HEAT_LEAF_DELAY="${HEAT_LEAF_DELAY:-0}"

scripts/heat-standalone.sh install
trap 'scripts/heat-standalone.sh stop >/dev/null 2>&1 || true' EXIT
url_line="$(scripts/heat-standalone.sh start | grep '^HEAT_URL=' | tail -n 1)"
export HEAT_URL="${url_line#HEAT_URL=}"
echo "real Heat at $HEAT_URL"

# The real-Heat tests (tests/real_heat*.rs) are #[ignore]d in a plain `cargo test` (they need
# this server); --ignored runs exactly them. Two threads: one Heat engine on a 2-core machine.
suites=()
for f in tests/real_heat*.rs; do
  name="$(basename "$f" .rs)"
  [ "$name" = real_heat_actions ] && continue
  suites+=(--test "$name")
done
cargo test --locked "${suites[@]}" -- --ignored --test-threads=2

# The operator-action scenarios (scale, node-by-node rollouts, failure and resume, kill and
# reattach, hooks, headless commands) run after the rest, several at once: each spends most of
# its time waiting on Heat's 1-second steps (member updates, resource checks), not on CPU, so
# running four together takes about a third of the time one at a time does while keeping the
# one-process Heat well below one core (the GIL's limit). REAL_HEAT_ACTIONS_THREADS changes it.
cargo test --locked --test real_heat_actions -- --ignored \
  --test-threads="${REAL_HEAT_ACTIONS_THREADS:-4}"
