#!/bin/bash
# make bench: govs against Debian's OVS 3.1 (userspace datapath, with and without userspace TSO) and the
# Linux bridge on the same two-namespace veth topology, interleaved. Needs root. See tests/bench/README.md.
# Environment: BENCH_ROUNDS (default 2), BENCH_SECS (iperf3 seconds, default 4), BENCH_NO_INSTALL=1,
# BENCH_NO_OVSDB=1, BENCH_PEERS (comma list from govs,govs-sockbuf,ovs,ovs-tso,bridge; the net section),
# BENCH_SECTIONS (comma list from net,vhost,multiflow,ovsdb,ovn,flowmod,bond,ct,tunnel,ovnpipe; default all; a partial run writes
# results/<sections>-latest.* instead of latest.*), BENCH_VHOST_PEERS (govs,govs-zc,ovs-dpdk), BENCH_VHOST_SIZES
# (64,1518), BENCH_VHOST_SECS (14), BENCH_MF_PEERS (govs,ovs,bridge).
set -e
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/run.py" "$@"
