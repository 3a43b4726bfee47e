#!/bin/bash
# tunnel.sh up PEER|down (env TUN_PREFIX, default tn; TUN_DIR, default /tmp/tunbench) : two chassis namespaces
# PREFIX-ca and PREFIX-cb (underlay 172.30.0.1 and .2 on a veth "ul" joining them), each with a VIF namespace,
# PREFIX-a (10.77.0.1) and PREFIX-b (10.77.0.2, so tput.sh and crr.sh run unchanged), eth0 at MTU 1450 and its
# default offloads, host end "vif" in the chassis. PEER:
#   govs-geneve, govs-vxlan  govs' bin/ovs-vswitchd in each chassis (embedded database in TUN_DIR/a, /b), br-phy
#                            with ul and the underlay address, br-int with vif and tunnel port tun0 (key=5)
#   govs-geneve-gso, govs-vxlan-gso  the same with other_config:tunnel-udp-gso=true on tun0 (super-frames cross the
#                            underlay whole, as UDP GSO frames)
#   govs-base-geneve         the same with the ovs-vswitchd binary named by TUN_GOVS_BASE (before/after a change)
#   ovs-geneve               Debian's ovsdb-server + ovs-vswitchd (datapath_type=netdev, userspace tunnelling),
#                            same bridges; each switch has its chassis namespace to itself, so the ovs-netdev taps
#                            do not collide; the VIFs get tx checksum offload off, as in net/peer-ovs.sh
#   kernel                   a Linux vxlan device (id 5, port 4789) and vif on a Linux bridge (this kernel has
#                            no geneve module)
#   govs-l2, kernel-l2       no tunnel: vif and ul on one govs bridge (NORMAL) or one Linux bridge per chassis, the
#                            same two switches in series with nothing to encapsulate: the most a tunnel on them can
#                            carry
# TUN_CSUM=1 sets options:csum=true on the govs and OVS tunnels (OVN's default for Geneve).
# TUN_SOCKBUF=BYTES sets other_config:userspace-sock-buf-size before any port is added.
# GOVS_PPROF=SOCKET serves each chassis' govs' Go profiles at SOCKET.a and SOCKET.b. Stops only the processes in its own pidfiles.
p=${TUN_PREFIX:-tn}; d=${TUN_DIR:-/tmp/tunbench}
here=$(cd $(dirname $0) && pwd); top=$(cd $here/../../.. && pwd)

topo() {
  for s in a b; do
    ip netns add $p-c$s; ip netns add $p-$s
    ip -n $p-c$s link set lo up; ip -n $p-$s link set lo up
    ip link add vif netns $p-c$s type veth peer name eth0 netns $p-$s
    ip -n $p-c$s link set vif up; ip -n $p-$s link set eth0 mtu 1450 up
  done
  ip -n $p-a addr add 10.77.0.1/24 dev eth0; ip -n $p-b addr add 10.77.0.2/24 dev eth0
  ip link add ul netns $p-ca type veth peer name ul netns $p-cb
  ip -n $p-ca link set ul up; ip -n $p-cb link set ul up
}

switch() { # switch s bin kind: an ovs-vswitchd in chassis s
  local s=$1 bin=$2 kind=$3 o=$d/$1 l r
  [ $s = a ] && { l=172.30.0.1; r=172.30.0.2; } || { l=172.30.0.2; r=172.30.0.1; }
  mkdir -p $o; rm -f $o/conf.db
  local V="/usr/bin/ovs-vsctl --timeout=10 --db=unix:$o/db.sock"
  local E="env OVS_RUNDIR=$o OVS_LOGDIR=$o OVS_DBDIR=$o OVS_SYSCONFDIR=$o"
  if [ $bin = debian ]; then
    ovsdb-tool create $o/conf.db /usr/share/openvswitch/vswitch.ovsschema
    $E /usr/sbin/ovsdb-server $o/conf.db --remote=punix:$o/db.sock --pidfile=$o/ovsdb-server.pid \
      --unixctl=$o/ovsdb-server.ctl --detach --no-chdir --log-file=$o/ovsdb-server.log || return 1
    $V --no-wait init
    ip netns exec $p-c$s $E /usr/sbin/ovs-vswitchd unix:$o/db.sock --pidfile=$o/ovs-vswitchd.pid \
      --unixctl=$o/ovs-vswitchd.ctl --detach --no-chdir --log-file=$o/ovs-vswitchd.log || return 1
  else
    local pp=; [ -n "$GOVS_PPROF" ] && pp=--pprof=$GOVS_PPROF.$s
    ip netns exec $p-c$s $E $bin $pp --embedded-db=$o/conf.db --pidfile=$o/ovs-vswitchd.pid \
      --unixctl=$o/ovs-vswitchd.ctl --log-file=$o/ovs-vswitchd.log --detach --no-chdir || return 1
    for i in $(seq 50); do [ -S $o/db.sock ] && break; sleep 0.1; done
    $V --no-wait init
  fi
  [ -n "$TUN_SOCKBUF" ] && $V set Open_vSwitch . other_config:userspace-sock-buf-size=$TUN_SOCKBUF
  $V add-br br-phy -- set bridge br-phy datapath_type=netdev -- add-br br-int -- set bridge br-int datapath_type=netdev
  for i in $(seq 50); do ip -n $p-c$s link show br-phy >/dev/null 2>&1 && break; sleep 0.1; done
  ip -n $p-c$s addr add $l/24 dev br-phy; ip -n $p-c$s link set br-phy up
  $V add-port br-phy ul -- add-port br-int vif -- add-port br-int tun0 -- set interface tun0 type=$kind \
    options:remote_ip=$r options:key=5
  [ -n "$TUN_CSUM" ] && $V set interface tun0 options:csum=true
  [ -n "$TUN_UDP_GSO" ] && $V set interface tun0 other_config:tunnel-udp-gso=true
  true
}

case "$1" in
up)
  topo || exit 1
  case "$2" in
  govs-geneve) switch a $top/bin/ovs-vswitchd geneve && switch b $top/bin/ovs-vswitchd geneve ;;
  govs-vxlan) switch a $top/bin/ovs-vswitchd vxlan && switch b $top/bin/ovs-vswitchd vxlan ;;
  govs-geneve-gso) TUN_UDP_GSO=1; switch a $top/bin/ovs-vswitchd geneve && switch b $top/bin/ovs-vswitchd geneve ;;
  govs-vxlan-gso) TUN_UDP_GSO=1; switch a $top/bin/ovs-vswitchd vxlan && switch b $top/bin/ovs-vswitchd vxlan ;;
  govs-base-geneve) switch a $TUN_GOVS_BASE geneve && switch b $TUN_GOVS_BASE geneve ;;
  ovs-geneve) switch a debian geneve && switch b debian geneve || exit 1
    # as net/peer-ovs.sh: without userspace TSO, OVS 3.1 passes no TCP with the VIFs' tx checksum offload on
    for s in a b; do ip netns exec $p-$s ethtool -K eth0 tx off >/dev/null; done ;;
  kernel)
    ip -n $p-ca addr add 172.30.0.1/24 dev ul; ip -n $p-cb addr add 172.30.0.2/24 dev ul
    for s in a b; do
      [ $s = a ] && r=172.30.0.2 || r=172.30.0.1
      ip -n $p-c$s link add vx0 type vxlan id 5 remote $r dstport 4789 dev ul
      ip -n $p-c$s link add br0 type bridge
      ip -n $p-c$s link set vx0 master br0; ip -n $p-c$s link set vif master br0
      ip -n $p-c$s link set vx0 up; ip -n $p-c$s link set br0 up
    done ;;
  govs-l2)
    for s in a b; do
      o=$d/$s; mkdir -p $o; rm -f $o/conf.db
      ip netns exec $p-c$s env OVS_RUNDIR=$o OVS_LOGDIR=$o OVS_DBDIR=$o OVS_SYSCONFDIR=$o $top/bin/ovs-vswitchd \
        --embedded-db=$o/conf.db --pidfile=$o/ovs-vswitchd.pid --unixctl=$o/ovs-vswitchd.ctl \
        --log-file=$o/ovs-vswitchd.log --detach --no-chdir || exit 1
      for i in $(seq 50); do [ -S $o/db.sock ] && break; sleep 0.1; done
      /usr/bin/ovs-vsctl --timeout=10 --db=unix:$o/db.sock -- init -- add-br br-int \
        -- set bridge br-int datapath_type=netdev -- add-port br-int vif -- add-port br-int ul || exit 1
    done ;;
  kernel-l2)
    for s in a b; do
      ip -n $p-c$s link add br0 type bridge
      ip -n $p-c$s link set ul master br0; ip -n $p-c$s link set vif master br0; ip -n $p-c$s link set br0 up
    done ;;
  *) echo "tunnel.sh: unknown peer $2" >&2; exit 2 ;;
  esac ;;
down)
  for s in a b; do
    for x in ovs-vswitchd ovsdb-server; do
      f=$d/$s/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
      kill $pid 2>/dev/null; for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    done
    ip netns del $p-c$s 2>/dev/null; ip netns del $p-$s 2>/dev/null
  done
  rm -rf $d; true ;;
esac
