#!/usr/bin/env bash
# Bounded fuzzing of every untrusted-input parser, for CI.
#
#   scripts/fuzz-smoke.sh [SECONDS]        (default 60; the whole run's budget)
#
# With cargo-fuzz installed (`cargo install cargo-fuzz`), each target in fuzz/ gets an equal
# share of the budget under libFuzzer (coverage-guided, AddressSanitizer). The stable
# toolchain is enough: RUSTC_BOOTSTRAP=1 lets it take cargo-fuzz's -Z flags. Without
# cargo-fuzz (or with CALDERA_FUZZ_MODE=harness) the seeded random harness
# tests/offline/fuzz_parsers.rs runs for the budget instead. Either way a panic fails the script
# and the input that caused it is kept (fuzz/artifacts/<target>/ or target/tmp/).
set -euo pipefail

secs="${1:-60}"
case "$secs" in
  ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

targets=(clouds_yaml theme console_config heat magnum nova keystone misc)
mode="${CALDERA_FUZZ_MODE:-auto}"
if [ "$mode" = auto ]; then
  if cargo fuzz --version >/dev/null 2>&1; then mode=libfuzzer; else mode=harness; fi
fi

seed_corpus() {
  # Real bodies and files as starting points; libFuzzer mutates from there.
  for t in "${targets[@]}"; do mkdir -p "fuzz/corpus/$t"; done
  cp -n tests/fixtures/heat/*.json fuzz/corpus/heat/ 2>/dev/null || true
  cp -n tests/fixtures/heat/error-*.json fuzz/corpus/misc/ 2>/dev/null || true
  cp -n themes/*.toml fuzz/corpus/theme/ 2>/dev/null || true
  [ -e fuzz/corpus/clouds_yaml/sample.yaml ] || printf '%s\n' \
    'clouds:' '  mycloud:' '    auth_type: password' '    auth:' \
    '      auth_url: https://keystone.example.com:5000/v3' '      username: u' \
    '      password: p' '      project_name: demo' '      user_domain_name: Default' \
    '      project_domain_name: Default' '    region_name: RegionOne' '    verify: false' \
    > fuzz/corpus/clouds_yaml/sample.yaml
  [ -e fuzz/corpus/console_config/sample.toml ] || printf '%s\n' \
    'theme = "light"' 'refresh_secs = 2' '[keys]' 'quit = ["ctrl-q", "q"]' \
    > fuzz/corpus/console_config/sample.toml
}

case "$mode" in
  libfuzzer)
    seed_corpus
    per=$(( secs / ${#targets[@]} ))
    [ "$per" -ge 1 ] || per=1
    for t in "${targets[@]}"; do
      echo "== fuzz $t for ${per}s"
      RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$per" -rss_limit_mb=2048 -max_len=262144
    done
    ;;
  harness)
    echo "== seeded random harness for ${secs}s (cargo-fuzz not installed)"
    CALDERA_FUZZ_SECS="$secs" cargo test --release --test offline fuzz_parsers:: -- --nocapture
    ;;
  *)
    echo "CALDERA_FUZZ_MODE must be auto, libfuzzer or harness" >&2; exit 2 ;;
esac
