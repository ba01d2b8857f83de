#!/usr/bin/env bash
# nova-heat-smoke.sh — the real Heat creating real OS::Nova::Servers on the real Nova of
# scripts/nova-standalone.sh, no Keystone. Starts both (Heat on HEAT_PORT, 8104, its own
# database), creates a stack, prints what Heat and Nova say, and stops both unless KEEP=1.
#
#   scripts/nova-heat-smoke.sh      # ~3 min: both starts (~55 s) and the stack (~110 s)
#
# How Heat finds Nova without Keystone: scripts/nova-standalone.sh token-response writes a
# Keystone v3 token body whose catalog names Nova (compute), the stand-in Glance (image) and
# Neutron (network); Heat's noauth middleware hands it to every request ([noauth]
# token_response, HEAT_NOAUTH_TOKEN_RESPONSE in scripts/heat-standalone.sh). Requests to Heat
# must then carry some X-Auth-Token (any value: Heat's clients send it on to Nova, which
# reads `user:project` from it; without one Heat fails "No valid authentication is
# available" as soon as it asks Glance or Nova).
# The stack: a ResourceGroup of 2 OS::Nova::Server (image by name, `networks:
# [{allocate_network: none}]`) and one server whose spawn the fake driver fails
# (metadata caldera_fail_spawn). Measured: the group's servers CREATE_COMPLETE ~5 s after the
# stack create; the failing one makes the stack CREATE_FAILED only after 95-110 s, because Heat
# retries a failed create 5 times (action_retry_limit, deleting the ERROR server each time:
# the resource ends with the 6th Nova server id).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export HEAT_PORT="${HEAT_PORT:-8104}"
H="http://127.0.0.1:$HEAT_PORT/v1/admin"
N="${NOVA_URL:-http://127.0.0.1:8774/v2.1}"
T=(-H 'X-Auth-Token: admin:admin')
TIMEOUT="${NOVA_HEAT_SMOKE_TIMEOUT:-180}"

mkdir -p target
scripts/nova-standalone.sh start | tail -n 1
scripts/nova-standalone.sh token-response "$ROOT/target/nova-token.json"
HEAT_NOAUTH_TOKEN_RESPONSE="$ROOT/target/nova-token.json" scripts/heat-standalone.sh start | tail -n 1
stop_all() {
    [ "${KEEP:-0}" = 1 ] && return 0
    scripts/heat-standalone.sh stop || true
    scripts/nova-standalone.sh stop || true
}
trap stop_all EXIT

curl -s -m 30 -H 'Content-Type: application/json' -X POST "$N/flavors" \
    -d '{"flavor":{"name":"caldera.small","id":"caldera.small","ram":512,"vcpus":1,"disk":1}}' >/dev/null
cat >"$ROOT/target/nova-heat-stack.json" <<'EOF'
{"stack_name": "novacheck", "timeout_mins": 10, "template": {
  "heat_template_version": "2021-04-16",
  "resources": {
    "nodes": {"type": "OS::Heat::ResourceGroup", "properties": {"count": 2, "resource_def": {
      "type": "OS::Nova::Server", "properties": {
        "name": "novacheck-node-%index%", "image": "caldera-image-a", "flavor": "caldera.small",
        "networks": [{"allocate_network": "none"}]}}}},
    "bad": {"type": "OS::Nova::Server", "properties": {
        "name": "novacheck-bad", "image": "2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a02",
        "flavor": "caldera.small", "metadata": {"caldera_fail_spawn": "heat check: spawn refused"},
        "networks": [{"allocate_network": "none"}]}}}}}
EOF
t0=$SECONDS
curl -s -m 30 "${T[@]}" -H 'Content-Type: application/json' -X POST "$H/stacks" \
    -d @"$ROOT/target/nova-heat-stack.json" | jq -c .
while :; do
    s="$(curl -s -m 30 -L "${T[@]}" "$H/stacks/novacheck" | jq -r .stack.stack_status)"
    [ "$s" != CREATE_IN_PROGRESS ] && break
    [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || { echo "FAIL still $s after $TIMEOUT s" >&2; exit 1; }
    sleep 2
done
echo "stack $s after $((SECONDS - t0)) s"
curl -s -L "${T[@]}" "$H/stacks/novacheck/resources?nested_depth=1" |
    jq -r '.resources[] | "  heat: \(.resource_name) \(.resource_type) \(.resource_status) \(.physical_resource_id)"'
curl -s -H 'OpenStack-API-Version: compute 2.79' "$N/servers/detail" |
    jq -r '.servers[] | "  nova: \(.name) \(.id) \(.status) \(.fault.message // "")"'
[ "$s" = CREATE_FAILED ] || { echo "FAIL expected CREATE_FAILED (the failing server)" >&2; exit 1; }
[ "$(curl -s -H 'OpenStack-API-Version: compute 2.79' "$N/servers?status=ACTIVE" | jq '.servers | length')" = 2 ] ||
    { echo "FAIL expected 2 ACTIVE servers in Nova" >&2; exit 1; }
echo "ok"
