#!/usr/bin/env bash
# Runs the real OpenStack CLI (python-openstackclient + heatclient + magnumclient) against
# caldera's simulated cloud, to check the simulator answers what those clients expect.
#
#   scripts/osc-against-sim.sh            # starts a simulator (demo scenario) itself
#   SIM_URL=http://127.0.0.1:8787 scripts/osc-against-sim.sh   # uses a running `caldera sim`
#
# The clients are installed from PyPI into target/osc-venv (once).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/osc-venv
if [ ! -x "$VENV/bin/openstack" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet python-openstackclient python-heatclient python-magnumclient
fi

SIM_PID=""
cleanup() { if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; fi; }
trap cleanup EXIT

if [ -z "${SIM_URL:-}" ]; then
    PORT=${SIM_PORT:-18787}
    SIM_URL="http://127.0.0.1:$PORT"
    if [ -n "${CALDERA_BIN:-}" ]; then
        "$CALDERA_BIN" sim --addr "127.0.0.1:$PORT" --scenario demo > target/osc-sim.log 2>&1 &
    else
        cargo build --quiet --release --example sim_serve
        "${CARGO_TARGET_DIR:-target}/release/examples/sim_serve" demo "$PORT" > target/osc-sim.log 2>&1 &
    fi
    SIM_PID=$!
    for _ in $(seq 1 100); do
        curl -fs "$SIM_URL/identity/v3" > /dev/null 2>&1 && break
        sleep 0.1
    done
fi

# Fake credentials of the simulator's default user.
export OS_AUTH_URL="$SIM_URL/identity/v3" OS_USERNAME=operator OS_PASSWORD=caldera-sim \
    OS_PROJECT_NAME=demo OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default \
    OS_IDENTITY_API_VERSION=3 OS_REGION_NAME=RegionOne OS_INTERFACE=public
unset OS_CLOUD OS_CLIENT_CONFIG_FILE
OS="$VENV/bin/openstack"

failures=0
run() {
    echo "+ openstack $*"
    if ! "$OS" "$@" > target/osc-out.txt 2>&1; then
        failures=$((failures + 1))
        echo "FAILED:"
    fi
    head -n "${OSC_LINES:-15}" target/osc-out.txt
    echo
}

run coe cluster list
run coe cluster show prod-east
run coe nodegroup list prod-east
run coe nodegroup show prod-east workers-az2
NG_STACK=$("$OS" coe nodegroup show prod-east default-worker -f value -c stack_id)
BAD_STACK=$("$OS" coe nodegroup show batch-jobs default-worker -f value -c stack_id)
run stack list
run stack show "$NG_STACK" --no-resolve-outputs
run stack resource list -n 2 "$NG_STACK"
run stack event list --nested-depth 2 "$NG_STACK"
run stack output list "$BAD_STACK"
# Magnum's cluster stack (both default node groups live in it): the workers' addresses.
run stack output show "$BAD_STACK" kube_minions_private
run stack failures list "$BAD_STACK"
run coe cluster resize dev-small 4
run coe cluster show dev-small
run server list -n --limit 5

echo "$failures command(s) failed"
exit "$failures"
