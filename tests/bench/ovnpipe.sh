#!/bin/bash
# ovnpipe.sh [-rounds N] [-secs S] [-peers LIST]: traffic through the OVN pipeline of one logical switch.
# Namespaces a (10.0.0.1, 50:54:00:00:00:01, VIF sw0-p1) and b (10.0.0.2, ...:02, VIF sw0-p2) hang off
# br-int in switch namespace s, where Debian's OVN 23.03 runs on Debian's ovsdb-server (NB, SB and the
# chassis's conf.db), with Debian's ovn-northd and ovn-controller programming br-int (netdev datapath).
# Peers (default govs-normal,govs,ovs):
#   govs, ovs: ovs-vswitchd of govs' bin/ or Debian's OVS 3.1 under ovn-controller (tx offload off in a
#     and b for OVS, as its userspace datapath needs);
#   govs-normal, ovs-normal: the same switch with a plain bridge (NORMAL) on the same VIFs, no OVN;
#   govs-base: govs' ovs-vswitchd of another build, OVNPIPE_GOVS_BASE (before/after a change in one run).
# Figures per peer: iperf3 TCP 1 stream a -> b; 64 B frames from testpmd (net/pps.sh, to b's MAC) received
# of offered; first-packet round trip: median of 30 `ping -c 1` each right after `ovs-appctl
# dpctl/del-flows` (static neighbours, no ARP), against the warm round trip (30 `ping -c 1` through the
# flows the one before installed, alternating with those). For the OVN peers all again ("+ct") after adding ACLs from-lport and to-lport `ip4
# allow-related` and a load balancer 10.0.0.100:5201 -> 10.0.0.2:5201 to sw0 (conntrack in the
# pipeline), plus TCP through the load balancer's VIP. Rounds interleave the peers. Prints medians, govs'
# ratio to ovs and govs' OVN TCP to govs-normal's. Needs root, iperf3, dpdk-testpmd, ovn-central,
# ovn-host, a built bin/ovs-vswitchd. Stops only the processes of its own pidfiles. OVNPIPE_GOVS_ARGS:
# more arguments for govs' ovs-vswitchd (e.g. --pprof=pprof.sock, relative to its directory $work/s).
# -up PEER[,stateful] COMMAND: set PEER up (with the stateful pipeline if asked), run COMMAND (bash -c) with
# $p (the namespaces' prefix: $p-a, $p-b, $p-s) and $d (the switch's directory) exported, and tear down: to
# profile or look at one set-up.
set -u
rounds=2 secs=4 peers=govs-normal,govs,ovs upcmd=
while [ $# -gt 0 ]; do
  case "$1" in
  -rounds) rounds=$2; shift 2 ;; -secs) secs=$2; shift 2 ;; -peers) peers=$2; shift 2 ;;
  -up) upcmd=$3 peers=$2; shift 3 ;;
  *) echo "usage: $0 [-rounds N] [-secs S] [-peers LIST] | -up PEER[,stateful] COMMAND" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd); top=$(cd $here/../.. && pwd)
for x in iperf3 dpdk-testpmd ovn-northd ovn-controller ovn-nbctl ovn-sbctl; do
  command -v $x >/dev/null || { echo "ovnpipe.sh: $x missing" >&2; exit 1; }
done
[ -x $top/bin/ovs-vswitchd ] || { echo "ovnpipe.sh: $top/bin/ovs-vswitchd missing (make build)" >&2; exit 1; }
work=$(mktemp -d /tmp/gvovnpipe-XXXXXX)
p=gvop$$
nss=$p-s
d=$work/s

stop() { # the daemons of directory $1 (those named in $2, default all), by their pidfiles
  for x in ${2:-ovn-controller ovn-northd ovs-vswitchd ovsdb-server ovnsb ovnnb iperf3}; do
    f=$1/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    rm -f $f
  done
}
teardown() {
  stop $d; stop $work/b
  for n in $p-a $p-b $nss; do ip netns del $n 2>/dev/null; done
}
cleanup() { teardown; rm -rf $work; }
trap cleanup EXIT
trap 'exit 130' INT TERM

S="ip netns exec $nss"
vsctl() { /usr/bin/ovs-vsctl --timeout=30 --db=unix:$d/db.sock "$@"; }
appctl() { $S /usr/bin/ovs-appctl --timeout=20 -t $d/ovs-vswitchd.ctl "$@"; }
nbctl() { ovn-nbctl --db=unix:$d/nb.sock --timeout=60 "$@"; }
# daemon NAME BINARY ARGS...: start one in s, detached, with its pidfile, log and control socket in $d
# (their start-up chatter goes to $work/daemons.err)
daemon() {
  local n=$1 b=$2 ctl=--unixctl=$d/$1.ctl; shift 2
  [ $n = ovn-controller ] && ctl= # it has no --unixctl: its socket is named by its pid
  OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d OVN_RUNDIR=$d OVN_LOGDIR=$d OVN_DBDIR=$d $S $b "$@" --pidfile=$d/$n.pid \
    $ctl --detach --no-chdir --log-file=$d/$n.log 2>>$work/daemons.err
}
# waitfor SECONDS WHAT COMMAND...: poll COMMAND every 0.1 s until it succeeds
waitfor() {
  local n=$(($1 * 10)) what=$2 i; shift 2
  for i in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "ovnpipe.sh: timed out waiting for $what" >&2; return 1
}
bound() { [ "$(ovn-sbctl --db=unix:$d/sb.sock --bare --columns=up find Port_Binding logical_port=$1)" = true ]; }

# neigh: static neighbours (no ARP in the latency figures; the load balancer's VIP answers no ARP). testpmd
# takes eth0 down when it stops, which flushes even permanent entries: pps() sets them again.
neigh() {
  ip -n $p-a neigh replace 10.0.0.2 lladdr 50:54:00:00:00:02 dev eth0 nud permanent
  ip -n $p-a neigh replace 10.0.0.100 lladdr 50:54:00:00:00:02 dev eth0 nud permanent
  ip -n $p-b neigh replace 10.0.0.1 lladdr 50:54:00:00:00:01 dev eth0 nud permanent
}

up() {
  local peer=$1 vs=$top/bin/ovs-vswitchd extra=
  case $peer in
  ovs*) vs=/usr/sbin/ovs-vswitchd ;;
  govs-base) vs=${OVNPIPE_GOVS_BASE:?OVNPIPE_GOVS_BASE names the govs-base peer\'s ovs-vswitchd}; extra=${OVNPIPE_GOVS_ARGS:-} ;;
  govs*) extra=${OVNPIPE_GOVS_ARGS:-} ;;
  esac
  rm -rf $d $work/b; mkdir -p $d $work/b
  ip netns add $nss || return 1; ip -n $nss link set lo up
  local i=1 s
  for s in a b; do
    ip netns add $p-$s || return 1
    ip -n $p-$s link set lo up
    ip -n $p-$s link add eth0 type veth peer name ${s}0 netns $nss
    ip -n $p-$s link set eth0 address 50:54:00:00:00:0$i
    ip -n $p-$s addr add 10.0.0.$i/24 dev eth0
    ip -n $p-$s link set eth0 up; ip -n $nss link set ${s}0 up
    case $peer in ovs*) ip netns exec $p-$s ethtool -K eth0 tx off >/dev/null 2>&1 ;; esac
    i=$((i + 1))
  done
  neigh
  ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema >&2 || return 1
  daemon ovsdb-server /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock || return 1
  vsctl --no-wait init >&2
  daemon ovs-vswitchd $vs unix:$d/db.sock $extra || return 1
  case $peer in
  *normal)
    vsctl add-br br0 -- set bridge br0 datapath_type=netdev -- add-port br0 a0 -- add-port br0 b0 >&2 || return 1
    ;;
  *)
    ovsdb-tool create $d/nb.db /usr/share/ovn/ovn-nb.ovsschema >&2 || return 1
    ovsdb-tool create $d/sb.db /usr/share/ovn/ovn-sb.ovsschema >&2 || return 1
    daemon ovnnb /usr/sbin/ovsdb-server $d/nb.db --remote=punix:$d/nb.sock || return 1
    daemon ovnsb /usr/sbin/ovsdb-server $d/sb.db --remote=punix:$d/sb.sock || return 1
    daemon ovn-northd /usr/bin/ovn-northd --ovnnb-db=unix:$d/nb.sock --ovnsb-db=unix:$d/sb.sock || return 1
    vsctl add-br br-int -- set bridge br-int datapath_type=netdev fail-mode=secure other-config:disable-in-band=true \
      -- set open . external_ids:system-id=hv1 external_ids:ovn-remote=unix:$d/sb.sock \
      external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip=127.0.0.1 \
      external_ids:ovn-bridge-datapath-type=netdev >&2 || return 1
    daemon ovn-controller /usr/bin/ovn-controller unix:$d/db.sock || return 1
    vsctl add-port br-int a0 -- set interface a0 external_ids:iface-id=sw0-p1 \
      -- add-port br-int b0 -- set interface b0 external_ids:iface-id=sw0-p2 >&2 || return 1
    nbctl ls-add sw0 -- lsp-add sw0 sw0-p1 -- lsp-set-addresses sw0-p1 "50:54:00:00:00:01 10.0.0.1" \
      -- lsp-add sw0 sw0-p2 -- lsp-set-addresses sw0-p2 "50:54:00:00:00:02 10.0.0.2" >&2 || return 1
    waitfor 30 "sw0-p1 bound" bound sw0-p1 || return 1
    waitfor 30 "sw0-p2 bound" bound sw0-p2 || return 1
    nbctl --wait=hv sync >&2 || return 1
    ;;
  esac
  waitfor 20 "a ping through $peer" ip netns exec $p-a ping -c 1 -W 1 10.0.0.2 || return 1
}

# stateful: ACLs allow-related both ways and a load balancer on sw0 (conntrack and NAT in the pipeline)
stateful() {
  nbctl acl-add sw0 from-lport 1000 ip4 allow-related -- acl-add sw0 to-lport 1000 ip4 allow-related \
    -- lb-add lb0 10.0.0.100:5201 10.0.0.2:5201 tcp -- ls-lb-add sw0 lb0 >&2 || return 1
  nbctl --wait=hv sync >&2 || return 1
  waitfor 20 "a ping through the stateful pipeline" ip netns exec $p-a ping -c 1 -W 1 10.0.0.2
}

tcp() { # tcp DST: Gbit/s a -> DST:5201 (b's iperf3)
  rm -f $work/b/iperf3.pid
  ip netns exec $p-b iperf3 -s -1 -D -p 5201 -I $work/b/iperf3.pid
  waitfor 5 "iperf3 server" sh -c "ip netns exec $p-b ss -Htln 'sport = :5201' | grep -q ."
  timeout $((secs + 20)) ip netns exec $p-a iperf3 -J -c $1 -p 5201 -t $secs 2>/dev/null |
    python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))' 2>/dev/null || echo 0
  stop $work/b iperf3
}
pps() { # "offered/received" kpps of 64 B frames a -> b's MAC
  PPS_TXARGS="--eth-peer=0,50:54:00:00:00:02" $here/net/pps.sh $p | awk '{print $2 "/" $4}'
  ip -n $p-a link set eth0 up; ip -n $p-b link set eth0 up; neigh
}
rtt() { # first-packet and warm round trips in ms: medians of 30 single pings each, alternating one right after
  # a flush of the datapath's flows and one through the flows it left (each ping a new process, as a first
  # packet's is)
  local i first=() warm=()
  one() { ip netns exec $p-a ping -n -c 1 -W 1 10.0.0.2 | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p'; }
  for i in $(seq 30); do
    appctl dpctl/del-flows >/dev/null || { echo "n/a n/a"; return; }
    first+=($(one)); warm+=($(one))
  done
  local m='{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'
  echo "$(printf '%s\n' "${first[@]}" | sort -n | awk "$m") $(printf '%s\n' "${warm[@]}" | sort -n | awk "$m")"
}

# measure PEER: one line of key=value figures
measure() {
  local peer=$1 r
  teardown
  up $peer || { echo "error=setup"; return; }
  r="tcp=$(tcp 10.0.0.2) pps=$(pps)"
  set -- $(rtt); r="$r first=$1 warm=$2"
  case $peer in
  *normal) ;;
  *)
    stateful || { echo "$r error=stateful"; return; }
    r="$r ct_tcp=$(tcp 10.0.0.2) ct_vip_tcp=$(tcp 10.0.0.100) ct_pps=$(pps)"
    set -- $(rtt); r="$r ct_first=$1 ct_warm=$2"
    ;;
  esac
  echo "$r flows=$(appctl dpctl/dump-flows 2>/dev/null | wc -l)"
}

if [ -n "$upcmd" ]; then
  up ${peers%,*} || exit 1
  [ "${peers#*,}" = stateful ] && { stateful || exit 1; }
  export p d; bash -c "$upcmd"
  exit
fi
IFS=, read -ra plist <<< "$peers"
declare -A res
. $here/rounds.sh
rounds $rounds "${plist[@]}"
teardown

python3 - "$peers" <<P
import statistics, sys
peers = sys.argv[1].split(",")
raw = {$(for peer in "${plist[@]}"; do printf '"%s": "%s", ' $peer "${res[$peer]}"; done)}
rows = [("tcp", "TCP 1 stream, Gbit/s", True), ("pps", "64 B frames from testpmd: received of offered, kpps", True),
        ("first", "first-packet round trip (ping after dpctl/del-flows), ms", False),
        ("warm", "warm round trip (ping -c 1, flows installed), ms", False),
        ("ct_tcp", "+ct: TCP 1 stream, Gbit/s", True), ("ct_vip_tcp", "+ct: TCP 1 stream to the LB VIP, Gbit/s", True),
        ("ct_pps", "+ct: 64 B frames, received of offered, kpps", True),
        ("ct_first", "+ct: first-packet round trip, ms", False), ("ct_warm", "+ct: warm round trip, ms", False)]
def num(s, i=None):
    try: return float(s.split("/")[i]) if i is not None else float(s)
    except (ValueError, IndexError): return None
val = {}
for p in peers:
    kv = [dict(x.split("=", 1) for x in r.split()) for r in raw[p].split(";") if r]
    val[p] = {}
    for k, _, _ in rows:
        if k.endswith("pps"):
            rx = [v for v in (num(x.get(k, ""), 1) for x in kv) if v is not None]
            tx = [v for v in (num(x.get(k, ""), 0) for x in kv) if v is not None]
            val[p][k] = (statistics.median(rx), statistics.median(tx)) if rx else None
        else:
            v = [v for v in (num(x.get(k, "")) for x in kv) if v is not None]
            val[p][k] = statistics.median(v) if v else None
def first(x): return x[0] if isinstance(x, tuple) else x
def f(k, x):
    if x is None: return "n/a"
    if isinstance(x, tuple): return "%.0f of %.0f" % x
    return "%.3f" % x if "first" in k or "warm" in k else "%.2f" % x
cmp = [(g, o) for g, o in (("govs", "ovs"), ("govs", "govs-base")) if g in peers and o in peers]
print("| figure | " + " | ".join(peers) + "".join(" | %s/%s" % c for c in cmp) + " |")
print("|---|" + "---|" * (len(peers) + len(cmp)))
for k, label, hib in rows:
    if all(val[p][k] is None for p in peers): continue
    line = "| %s | " % label + " | ".join(f(k, val[p][k]) for p in peers)
    for g, o in cmp:
        a, b = first(val[g][k]), first(val[o][k])
        line += " | " + ("n/a" if not a or not b else "%.2fx" % (a / b if hib else b / a))
    print(line + " |")
if "govs" in peers and "govs-normal" in peers:
    for k in ("tcp", "ct_tcp", "ct_vip_tcp"):
        a, b = val["govs"][k], val["govs-normal"]["tcp"]
        if a and b: print("govs OVN %s / govs NORMAL tcp: %.2f" % (k, a / b))
print("raw per round: " + "; ".join("%s: %s" % (p, raw[p]) for p in peers))
P
