#!/bin/sh
# Side-by-side OVSDB server benchmark: govs' ovsdb-server against Debian's,
# over raw JSON-RPC on their unix sockets (see tests/bench/ovsdbbench).
# Needs Debian's openvswitch-switch (ovsdb-server, ovsdb-tool, ovs-vsctl).
# Usage: tests/bench/ovsdb.sh [-secs N] [-monitors N,N,...] [-rounds N]
# BENCH_PIN=1: both servers on CPU 0, the benchmark's clients on CPU 1.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ovsdb-server ./ovsdb # as make build does
if [ "${BENCH_PIN:-}" = 1 ]; then
  go build -o bin/ovsdbbench ./tests/bench/ovsdbbench
  exec taskset -c 1 bin/ovsdbbench -govs bin/ovsdb-server -server-cpus 0 "$@"
fi
exec go run ./tests/bench/ovsdbbench -govs bin/ovsdb-server "$@"
