#!/usr/bin/env bash
# nova-smoke.sh — curl checks against the real Nova of scripts/nova-standalone.sh (running).
#
#   scripts/nova-standalone.sh start && scripts/nova-smoke.sh
#
# Checks, each printed as "ok ..." (exit 1 at the first failure, with the answer that failed):
#   GET /v2.1/ (versions, the maximum microversion), a flavor made via the API, three servers
#   booted with "networks": "none" (microversion 2.79) on the stand-in Glance's image reaching
#   ACTIVE, GET /servers/detail paged by limit=2 and the next link's marker, a `name` regex
#   filter, a server forced to ERROR (metadata caldera_fail_spawn) with its fault,
#   os-getConsoleOutput, the image proxy (GET /v2.1/images, microversion 2.35), and deleting
#   every server. Waits are bounded (NOVA_SMOKE_TIMEOUT, 60 s each).
set -euo pipefail
N="${NOVA_URL:-http://127.0.0.1:8774/v2.1}"
MV="${NOVA_SMOKE_MICROVERSION:-2.79}"
IMAGE=2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a01
TIMEOUT="${NOVA_SMOKE_TIMEOUT:-60}"
PREFIX="smoke-$$"

fail() { echo "FAIL $*" >&2; exit 1; }
api() {  # METHOD PATH [BODY] -> body on stdout; fails on HTTP >= 400
    local m="$1" p="$2" body="${3:-}" out code
    out="$(mktemp)"
    code="$(curl -s -m 30 -o "$out" -w '%{http_code}' -X "$m" \
        -H 'Content-Type: application/json' -H "OpenStack-API-Version: compute $MV" \
        ${body:+-d "$body"} "$N$p")" || true
    if [ "${code:-000}" -ge 400 ] || [ "${code:-000}" = 000 ]; then
        cat "$out" >&2; rm -f "$out"; fail "$m $p -> $code"
    fi
    cat "$out"; rm -f "$out"
}
status_of() { api GET "/servers/$1" | jq -r .server.status; }
wait_status() {  # ID WANTED -> seconds waited
    local id="$1" want="$2" t0 s
    t0=$(date +%s.%N)
    while :; do
        s="$(status_of "$id")"
        [ "$s" = "$want" ] && break
        case "$s" in ERROR | ACTIVE) [ "$s" != "$want" ] && fail "$id is $s, wanted $want" ;; esac
        [ "$(echo "$(date +%s.%N) - $t0 > $TIMEOUT" | bc)" = 1 ] && fail "$id still $s after $TIMEOUT s"
        sleep 0.25
    done
    echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f'
}

v="$(api GET / | jq -r '.version.version')"
[ -n "$v" ] && [ "$v" != null ] || fail "GET / has no version"
echo "ok GET /v2.1/: compute API v2.1, microversions up to $v"

if ! curl -s -m 10 -o /dev/null -w '%{http_code}' "$N/flavors/caldera.small" | grep -q 200; then
    api POST /flavors '{"flavor":{"name":"caldera.small","id":"caldera.small","ram":512,"vcpus":1,"disk":1}}' >/dev/null
fi
echo "ok flavor caldera.small"

ids=()
for i in 1 2 3; do
    ids+=("$(api POST /servers "{\"server\":{\"name\":\"$PREFIX-$i\",\"flavorRef\":\"caldera.small\",\"imageRef\":\"$IMAGE\",\"networks\":\"none\"}}" | jq -r .server.id)")
done
for id in "${ids[@]}"; do
    echo "ok server $id ACTIVE after $(wait_status "$id" ACTIVE) s"
done

page1="$(api GET "/servers/detail?limit=2&name=^$PREFIX-")"
[ "$(jq '.servers | length' <<<"$page1")" = 2 ] || fail "limit=2 page: $page1"
next="$(jq -r '.servers_links[0].href' <<<"$page1")"
marker="${next##*marker=}"
page2="$(api GET "/servers/detail?limit=2&name=^$PREFIX-&marker=$marker")"
[ "$(jq '.servers | length' <<<"$page2")" = 1 ] || fail "page after marker $marker: $page2"
echo "ok paging: limit=2 -> 2 servers + next link (marker $marker) -> 1 server"

bad="$(api POST /servers "{\"server\":{\"name\":\"$PREFIX-bad\",\"flavorRef\":\"caldera.small\",\"imageRef\":\"$IMAGE\",\"networks\":\"none\",\"metadata\":{\"caldera_fail_spawn\":\"smoke: hypervisor refused\"}}}" | jq -r .server.id)"
echo "ok server $bad ERROR after $(wait_status "$bad" ERROR) s"
fault="$(api GET "/servers/$bad" | jq -c '.server.fault | {code, message}')"
grep -q 'hypervisor refused' <<<"$fault" || fail "fault: $fault"
echo "ok fault $fault"

out="$(api POST "/servers/${ids[0]}/action" '{"os-getConsoleOutput": {}}' | jq -r .output)"
[ -n "$out" ] || fail "empty console output"
echo "ok console output: $(tr '\n' '|' <<<"$out")"

imgs="$(MV=2.35 api GET /images | jq -c '[.images[].name]')"
echo "ok image proxy GET /v2.1/images: $imgs"

for id in "${ids[@]}" "$bad"; do api DELETE "/servers/$id" >/dev/null; done
t0=$SECONDS
while [ "$(api GET "/servers?name=^$PREFIX-" | jq '.servers | length')" != 0 ]; do
    [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || fail "servers not deleted after $TIMEOUT s"
    sleep 0.5
done
echo "ok 4 servers deleted in $((SECONDS - t0)) s"
