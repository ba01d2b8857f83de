#!/usr/bin/env bash
# real-templates.sh — the corpus of real Heat templates (tests/real_heat/corpus/index.yaml), for
# tests/real_heat/corpus.rs. Nothing of it is copied into the repository:
#
#   scripts/real-templates.sh install    # pip --no-deps the wheels the index cites into
#                                        #   target/corpus/<package>-<version> (cached), only to
#                                        #   read their templates
#   scripts/real-templates.sh prepare    # install, then one stack-create body per entry in
#                                        #   target/corpus/prepared/<id>.json, with stand-ins
#                                        #   generated from the Heat at HEAT_URL (needs it running)
#
# What `prepare` does and decides (stand-ins generated from Heat's own resource-type templates,
# deterministic addresses, wait conditions and software deployments stood in because no agent
# runs on a stand-in server) is written in scripts/corpus_stack.py's header.
# Knobs: HEAT_URL (prepare), HEAT_VENV (target/heat-venv: its python has heatclient, yaml and
# heat), CORPUS_DIR (target/corpus).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HEAT_VENV:-$ROOT/target/heat-venv}"
CORPUS="${CORPUS_DIR:-$ROOT/target/corpus}"
INDEX="$ROOT/tests/real_heat/corpus/index.yaml"
PY="$VENV/bin/python"

install_wheels() {
  [ -x "$PY" ] || "$ROOT/scripts/heat-standalone.sh" install
  mkdir -p "$CORPUS"
  # package==version pairs the index cites (entries `ours: true` have none).
  "$PY" - "$INDEX" <<'PYEOF' | while read -r pkg ver; do
import sys, yaml
seen = set()
for e in yaml.safe_load(open(sys.argv[1]))["templates"]:
    if not e.get("ours"):
        seen.add((e["package"], str(e["version"])))
for p, v in sorted(seen):
    print(p, v)
PYEOF
    dir="$CORPUS/$pkg-$ver"
    if [ ! -f "$dir/.installed" ]; then
      echo "real-templates: installing $pkg==$ver into $dir" >&2
      rm -rf "$dir"
      "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
        --target "$dir" "$pkg==$ver"
      touch "$dir/.installed"
    fi
  done
}

case "${1:-prepare}" in
  install) install_wheels ;;
  prepare)
    : "${HEAT_URL:?HEAT_URL must point at the running Heat (scripts/heat-standalone.sh start)}"
    install_wheels
    # Heat's package logs its deprecation notices on import: keep stderr to what matters.
    "$PY" -W ignore "$ROOT/scripts/corpus_stack.py" --heat-url "$HEAT_URL" --index "$INDEX" \
      --root "$CORPUS" --out "$CORPUS/prepared" 2> >(grep -v -e 'is HIDDEN' -e 'is DEPRECATED' \
      -e 'is UNSUPPORTED' -e '^$' -e 'ventlet' -e 'framework' -e 'migration' >&2)
    ;;
  *) echo "usage: $0 install|prepare" >&2; exit 2 ;;
esac
