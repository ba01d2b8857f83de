#!/usr/bin/env bash
# Runs every `caldera bench` part in turn and prints the markdown tables (progress on stderr).
#
#   scripts/bench-all.sh > target/bench.md     # about 15 minutes, most of it the real Heat part
#
# Needs: the openstack CLI in target/osc-venv (scripts/osc-venv.sh installs it) and, for the
# real Heat part, a standalone Heat on 127.0.0.1:8004 (scripts/heat-standalone.sh start);
# without a Heat answering there that part is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/osc-venv.sh > /dev/null
cargo build --release --features bench --quiet  # `bench render` needs the feature
BIN="${CARGO_TARGET_DIR:-target}/release/caldera"
echo "# caldera bench, $(date -u +%FT%TZ), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" bench render
"$BIN" bench ips-sim
"$BIN" bench events
if curl -fs -m 5 http://127.0.0.1:8004/ > /dev/null; then
    "$BIN" bench ips-heat
else
    echo "(no Heat on 127.0.0.1:8004: the real Heat part is skipped)"
fi
