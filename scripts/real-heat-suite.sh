#!/usr/bin/env bash
# Runs caldera's tests against a real OpenStack Heat on 127.0.0.1.
# Installs PostgreSQL (Debian) and Heat (PyPI, venv cached under target/) when missing,
# starts Heat, runs every tests/real_heat*.rs with `--ignored`, and stops Heat afterwards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

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
  # The rollout scenarios (issue 7, not finished) drive long updates through the one-process
  # Heat: about 6-13 minutes, and a stack show timed out once under load. They run on request
  # (REAL_HEAT_ACTIONS=1), alone, after the rest.
  [ "$name" = real_heat_actions ] && continue
  suites+=(--test "$name")
done
cargo test --locked "${suites[@]}" -- --ignored --test-threads=2
if [ "${REAL_HEAT_ACTIONS:-0}" = 1 ]; then
  cargo test --locked --test real_heat_actions -- --ignored --test-threads=1
fi
