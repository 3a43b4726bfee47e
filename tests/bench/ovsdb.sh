#!/bin/sh
# Side-by-side OVSDB server benchmark: govs' ovsdb-server against Debian's,
# over raw JSON-RPC on their unix sockets (see tests/bench/ovsdbbench).
# Needs Debian's openvswitch-switch (ovsdb-server, ovsdb-tool, ovs-vsctl).
# Usage: tests/bench/ovsdb.sh [-secs N] [-monitors N,N,...] [-rounds N]
set -eu
cd "$(dirname "$0")/../.."
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ovsdb-server ./ovsdb # as make build does
exec go run ./tests/bench/ovsdbbench -govs bin/ovsdb-server "$@"
