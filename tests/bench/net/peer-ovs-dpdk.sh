#!/bin/bash
# peer-ovs-dpdk.sh up DIR|down (env OVSDPDK_DIR, default /tmp/ovsdpdk) : Debian's OVS-DPDK (package
# openvswitch-switch-dpdk; binary /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk, its PMD thread on CPU 1 by
# pmd-cpu-mask=0x2, other threads unpinned) with its own ovsdb-server in OVSDPDK_DIR, bridge br0 (datapath_type=netdev,
# NORMAL) and two dpdkvhostuserclient ports vh1 -> DIR/tx.sock and vh2 -> DIR/rx.sock (see vhost-pps.sh).
# Installing the package adds an ovs-vswitchd alternative at lower priority and leaves the default one alone.
# Adapted from /work/shared/bench/peer-ovs-dpdk.sh: directory and DPDK file prefix unique per OVSDPDK_DIR; down stops
# only the processes in its own pidfiles and deletes br0/ovs-netdev in the current network namespace (run.sh runs
# it in a namespace of its own).
o=${OVSDPDK_DIR:-/tmp/ovsdpdk}; export OVS_RUNDIR=$o OVS_LOGDIR=$o OVS_DBDIR=$o OVS_SYSCONFDIR=$o
V="/usr/bin/ovs-vsctl --timeout=20 --db=unix:$o/db.sock"; fp=ovsdpdk$(echo $o | md5sum | cut -c1-8)
case "$1" in
up) mkdir -p $o; rm -f $o/conf.db; ovsdb-tool create $o/conf.db /usr/share/openvswitch/vswitch.ovsschema
  [ $(cat /proc/sys/vm/nr_hugepages) -ge 1024 ] || echo 1024 > /proc/sys/vm/nr_hugepages
  mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
  /usr/sbin/ovsdb-server $o/conf.db --remote=punix:$o/db.sock --pidfile=$o/ovsdb-server.pid --unixctl=$o/ovsdb-server.ctl \
    --detach --no-chdir --log-file=$o/ovsdb-server.log
  $V --no-wait init
  $V --no-wait set Open_vSwitch . other_config:dpdk-init=true other_config:dpdk-socket-mem=256 other_config:pmd-cpu-mask=0x2 \
    "other_config:dpdk-extra=--single-file-segments --file-prefix=$fp --no-pci"
  /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk unix:$o/db.sock --pidfile=$o/ovs-vswitchd.pid --unixctl=$o/ovs-vswitchd.ctl \
    --detach --no-chdir --log-file=$o/ovs-vswitchd.log
  $V add-br br0 -- set bridge br0 datapath_type=netdev \
    -- add-port br0 vh1 -- set interface vh1 type=dpdkvhostuserclient options:vhost-server-path=$2/tx.sock \
    -- add-port br0 vh2 -- set interface vh2 type=dpdkvhostuserclient options:vhost-server-path=$2/rx.sock ;;
down) for x in ovs-vswitchd ovsdb-server; do
    f=$o/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf $o /dev/hugepages/${fp}* /var/run/dpdk/${fp}; ip link del br0 2>/dev/null; ip link del ovs-netdev 2>/dev/null; true ;;
esac
