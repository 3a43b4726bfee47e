#!/bin/bash
# peer-govs-vhost.sh up DIR [zc]|down (env GOVS_DIR, default /tmp/govsvhost) : govs' bin/ovs-vswitchd with its
# embedded database in GOVS_DIR, pinned to CPU 1 (taskset -c 1; OVS-DPDK's PMD is on CPU 1, the frontends on CPU 0),
# bridge gvh0 (NORMAL: govs has no OpenFlow yet) with dpdkvhostuserclient ports vh1 -> DIR/tx.sock and
# vh2 -> DIR/rx.sock (see vhost-pps.sh), options:dq-zero-copy=false, or =true with "zc".
# Stops only the process named in its own pidfile.
d=${GOVS_DIR:-/tmp/govsvhost}; export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVS_SYSCONFDIR=$d
here=$(cd $(dirname $0) && pwd); top=$(cd $here/../../.. && pwd)
V="/usr/bin/ovs-vsctl --timeout=10 --db=unix:$d/db.sock"
case "$1" in
up)
  zc=false; [ "$3" = zc ] && zc=true
  mkdir -p $d; rm -f $d/conf.db
  taskset -c 1 $top/bin/ovs-vswitchd --embedded-db=$d/conf.db --pidfile=$d/ovs-vswitchd.pid --unixctl=$d/ovs-vswitchd.ctl \
    --log-file=$d/ovs-vswitchd.log --detach --no-chdir || exit 1
  for i in $(seq 50); do [ -S $d/db.sock ] && break; sleep 0.1; done
  $V --no-wait init
  $V add-br gvh0 -- add-port gvh0 vh1 -- set Interface vh1 type=dpdkvhostuserclient options:vhost-server-path=$2/tx.sock \
    options:dq-zero-copy=$zc -- add-port gvh0 vh2 -- set Interface vh2 type=dpdkvhostuserclient \
    options:vhost-server-path=$2/rx.sock options:dq-zero-copy=$zc
  ;;
down)
  f=$d/ovs-vswitchd.pid
  if [ -f $f ]; then pid=$(cat $f); kill $pid 2>/dev/null
    for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; fi
  rm -rf $d; ip link del gvh0 2>/dev/null; true
  ;;
esac
