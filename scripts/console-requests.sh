#!/usr/bin/env bash
# Counts the requests the console makes on the built-in simulator, driven in tmux:
#   20 s on dev-small's dashboard (steady), then 10 s of the settle burst after scaling its
#   default-worker 3 -> 5.
# Usage: scripts/console-requests.sh [BINARY]   (default target/debug/caldera; needs tmux)
# Prints one line; compare two builds by passing each binary.
set -euo pipefail
BIN="${1:-target/debug/caldera}"
LOG="$(mktemp -t caldera-requests.XXXXXX)"
S="caldera-requests-$$"
count() { grep -c 'http method' "$LOG" || true; }
trap 'tmux kill-session -t "$S" 2>/dev/null || true; rm -f "$LOG"' EXIT
tmux new-session -d -s "$S" -x 120 -y 40 \
  "env RUST_LOG=caldera_cloud::api::http=debug $BIN --simulator --log-file $LOG"
sleep 4
tmux send-keys -t "$S" j Enter          # dev-small, its dashboard
sleep 10
a=$(count); sleep 20; b=$(count)
tmux send-keys -t "$S" j c              # default-worker, scale
sleep 1
tmux send-keys -t "$S" BSpace 5 Enter   # 3 -> 5, plan
sleep 2
tmux send-keys -t "$S" y                # confirm
sleep 1
c=$(count); sleep 10; d=$(count)
echo "dashboard, steady 20 s: $((b - a)) requests; settle burst, 10 s: $((d - c)) requests"
