#!/usr/bin/env bash
# Installs the real OpenStack CLI (python-openstackclient + heatclient + magnumclient, from
# PyPI) into target/osc-venv, once; prints the path of the `openstack` it installed.
# `caldera bench` and scripts/osc-against-sim.sh use it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/osc-venv
if [ ! -x "$VENV/bin/openstack" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet python-openstackclient python-heatclient python-magnumclient
fi
echo "$VENV/bin/openstack"
