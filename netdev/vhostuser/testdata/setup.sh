#!/bin/bash
# setup.sh: what the vhost-user end-to-end tests (testpmd_linux_test.go) need on a Debian 12 machine,
# run as root: Debian's DPDK (dpdk-testpmd with the virtio-user PMD) and 2 MiB hugepages mounted on
# /dev/hugepages. Idempotent; the tests fail, saying why, when any of this is missing.
set -e
if ! command -v dpdk-testpmd >/dev/null; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dpdk-dev
fi
# Two testpmd instances with --socket-mem 256 each, plus room for a restarted one: 512 pages of 2 MiB.
want=512
have=$(cat /proc/sys/vm/nr_hugepages)
[ "$have" -ge "$want" ] || echo $want > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
grep -q '^HugePages_Total: *[1-9]' /proc/meminfo || { echo "setup.sh: no hugepages could be reserved" >&2; exit 1; }
