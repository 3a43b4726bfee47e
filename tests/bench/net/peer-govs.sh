#!/bin/bash
# peer-govs.sh up [sockbuf]|down (env GOVS_PREFIX, default gv; GOVS_DIR, default /tmp/govsbench) : govs' bin/ovs-vswitchd in /tmp/govsbench, bridge gbr0 with ports gv-a0 and
# gv-b0 from topo.sh; the namespaces' veths keep their default offloads.
# It starts the switch with its embedded database (--embedded-db=FILE) when this build has one; otherwise it
# falls back to Debian's /usr/sbin/ovsdb-server on a temporary conf.db and points bin/ovs-vswitchd at its socket.
# With "sockbuf", other_config:userspace-sock-buf-size=1073741823 is set before any port is added.
# GOVS_NRXQ=N sets options:n_rxq=N on both ports, GOVS_PMD_MASK=M other_config:pmd-cpu-mask=M; GOVS_TASKSET (e.g. "taskset -c 0") prefixes the switch's
# command line; GOVS_PPROF=SOCKET serves its Go profiles there (--pprof). GOVS_IFTYPE=afxdp makes both ports
# type=afxdp; GOVS_TXOFF=1 turns tx checksum offload (and with it TSO) off on the namespaces' eth0, as AF_XDP needs.
# Stops only the processes named in its own pidfiles.
p=${GOVS_PREFIX:-gv}; d=${GOVS_DIR:-/tmp/govsbench}; export OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVS_SYSCONFDIR=$d
here=$(cd $(dirname $0) && pwd); top=$(cd $here/../../.. && pwd)
V="/usr/bin/ovs-vsctl --timeout=10 --db=unix:$d/db.sock"
case "$1" in
up)
  mkdir -p $d; rm -f $d/conf.db
  pp=${GOVS_PPROF:+--pprof=$GOVS_PPROF}
  if $GOVS_TASKSET $top/bin/ovs-vswitchd $pp --embedded-db=$d/conf.db --pidfile=$d/ovs-vswitchd.pid --unixctl=$d/ovs-vswitchd.ctl \
       --log-file=$d/ovs-vswitchd.log --detach --no-chdir 2>$d/embedded.err; then
    echo embedded > $d/mode
    for i in $(seq 50); do [ -S $d/db.sock ] && break; sleep 0.1; done
    $V --no-wait init
  else
    grep -q 'not available' $d/embedded.err || { cat $d/embedded.err >&2; exit 1; }
    echo external > $d/mode
    ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema
    /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile=$d/ovsdb-server.pid \
      --unixctl=$d/ovsdb-server.ctl --detach --no-chdir --log-file=$d/ovsdb-server.log
    $V --no-wait init
    [ "$2" = sockbuf ] && $V --no-wait set Open_vSwitch . other_config:userspace-sock-buf-size=1073741823
    $GOVS_TASKSET $top/bin/ovs-vswitchd $pp unix:$d/db.sock --pidfile=$d/ovs-vswitchd.pid --unixctl=$d/ovs-vswitchd.ctl \
      --log-file=$d/ovs-vswitchd.log --detach --no-chdir
  fi
  [ "$2" = sockbuf ] && $V set Open_vSwitch . other_config:userspace-sock-buf-size=1073741823
  $here/topo.sh up $p
  if [ "$GOVS_TXOFF" = 1 ]; then
    for s in a b; do ip netns exec $p-$s ethtool -K eth0 tx off >/dev/null; done
  fi
  if [ -n "$GOVS_IFTYPE" ]; then
    $V add-br gbr0 -- add-port gbr0 $p-a0 -- set Interface $p-a0 type=$GOVS_IFTYPE \
      -- add-port gbr0 $p-b0 -- set Interface $p-b0 type=$GOVS_IFTYPE
  elif [ -n "$GOVS_NRXQ" ]; then
    $V add-br gbr0 -- add-port gbr0 $p-a0 -- set Interface $p-a0 options:n_rxq=$GOVS_NRXQ \
      -- add-port gbr0 $p-b0 -- set Interface $p-b0 options:n_rxq=$GOVS_NRXQ
  else
    $V add-br gbr0 -- add-port gbr0 $p-a0 -- add-port gbr0 $p-b0
  fi
  if [ -n "$GOVS_PMD_MASK" ]; then $V set Open_vSwitch . other_config:pmd-cpu-mask=$GOVS_PMD_MASK; fi
  ;;
down)
  $here/topo.sh down $p
  for p in ovs-vswitchd ovsdb-server; do
    f=$d/$p.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf $d; ip link del gbr0 2>/dev/null; true
  ;;
esac
