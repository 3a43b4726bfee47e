#!/bin/bash
# peer-ovs.sh up|down [tso] : Debian's Open vSwitch 3.1 (ovsdb-server + ovs-vswitchd, userspace
# datapath_type=netdev) in /tmp/ovsref, bridge br0 with ports ref-a0 and ref-b0 from topo.sh.
# Env OVS_PREFIX (default ref) and OVS_DIR (default /tmp/ovsref) override the names. The down step deletes
# br0 and ovs-netdev in the current network namespace: run it in a namespace of its own (run.sh does) when
# another netdev-datapath OVS is running on the machine.
# Without tso the namespaces' veths get tx checksum offload turned off (else TCP fails through OVS).
p=${OVS_PREFIX:-ref}; d=${OVS_DIR:-/tmp/ovsref}; export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVS_SYSCONFDIR=$d
V="/usr/bin/ovs-vsctl --timeout=10 --db=unix:$d/db.sock"
here=$(dirname $0)
case "$1" in
up)
  mkdir -p $d; rm -f $d/conf.db
  ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema
  /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile=$d/ovsdb-server.pid --detach --log-file=$d/ovsdb-server.log
  $V --no-wait init
  [ "$2" = tso ] && $V --no-wait set Open_vSwitch . other_config:userspace-tso-enable=true
  /usr/sbin/ovs-vswitchd unix:$d/db.sock --pidfile=$d/ovs-vswitchd.pid --detach --log-file=$d/ovs-vswitchd.log
  $here/topo.sh up $p
  $V add-br br0 -- set bridge br0 datapath_type=netdev -- add-port br0 $p-a0 -- add-port br0 $p-b0
  if [ "$2" != tso ]; then for s in a b; do ip netns exec $p-$s ethtool -K eth0 tx off >/dev/null; done; fi
  ;;
down)
  $here/topo.sh down $p
  for x in ovs-vswitchd ovsdb-server; do
    f=$d/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf $d; ip link del br0 2>/dev/null; ip link del ovs-netdev 2>/dev/null; true
  ;;
esac
