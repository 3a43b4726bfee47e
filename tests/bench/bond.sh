#!/bin/bash
# bond.sh [-rounds N] [-secs S] [-streams P] [-peers LIST]: TCP throughput over a balance-tcp bond of two
# veths against one veth. Namespace a (iperf3 client) -- switch 1 == link == switch 2 -- namespace b
# (iperf3 server, P parallel streams, S seconds), where the link is a bond of two veths with LACP
# (lacp=active, lacp-time=fast, bond_mode=balance-tcp) or a single veth. Each switch runs with Debian's
# ovsdb-server in a namespace of its own. Peers (default govs-bond,govs-single,ovs-bond,ovs-single): govs'
# ovs-vswitchd on both sides, or Debian's OVS 3.1 (netdev datapath; tx offload off in a and b, as its
# userspace datapath needs). Rounds interleave the peers. Prints Gbit/s (median), the packets each bond
# member sent, and the ratios. Needs root, iperf3 and a built bin/ovs-vswitchd (make build). Stops only
# the processes of its own pidfiles.
set -u
rounds=2 secs=4 streams=8 peers=govs-bond,govs-single,ovs-bond,ovs-single
while [ $# -gt 0 ]; do
  case "$1" in
  -rounds) rounds=$2; shift 2 ;; -secs) secs=$2; shift 2 ;; -streams) streams=$2; shift 2 ;;
  -peers) peers=$2; shift 2 ;;
  *) echo "usage: $0 [-rounds N] [-secs S] [-streams P] [-peers LIST]" >&2; exit 2 ;;
  esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x $top/bin/ovs-vswitchd ] || { echo "bond.sh: $top/bin/ovs-vswitchd missing (make build)" >&2; exit 1; }
work=$(mktemp -d /tmp/gvbond-XXXXXX)
p=gvbd$$
nsa=$p-a nsb=$p-b ns1=$p-s1 ns2=$p-s2

stop() { # stop the daemons of directory $1 by their pidfiles
  for x in ovs-vswitchd ovsdb-server iperf3; do
    f=$1/$x.pid; [ -f $f ] || continue; pid=$(cat $f)
    kill $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    rm -f $f
  done
}
teardown() {
  stop $work/s1; stop $work/s2; stop $work/b
  for n in $nsa $nsb $ns1 $ns2; do ip netns del $n 2>/dev/null; done
}
cleanup() { teardown; rm -rf $work; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# switch DIR NS VSWITCHD: Debian's ovsdb-server and the given ovs-vswitchd in NS, state in DIR
switch() {
  local d=$1 ns=$2 vs=$3
  mkdir -p $d
  ovsdb-tool create $d/conf.db /usr/share/openvswitch/vswitch.ovsschema >&2 || return 1
  ip netns exec $ns /usr/sbin/ovsdb-server $d/conf.db --remote=punix:$d/db.sock --pidfile=$d/ovsdb-server.pid \
    --unixctl=$d/ovsdb-server.ctl --detach --no-chdir --log-file=$d/ovsdb-server.log >&2 || return 1
  /usr/bin/ovs-vsctl --timeout=20 --db=unix:$d/db.sock --no-wait init >&2
  OVS_RUNDIR=$d OVS_LOGDIR=$d OVS_DBDIR=$d ip netns exec $ns $vs unix:$d/db.sock --pidfile=$d/ovs-vswitchd.pid \
    --unixctl=$d/ovs-vswitchd.ctl --detach --no-chdir --log-file=$d/ovs-vswitchd.log >&2
}
vsctl() { /usr/bin/ovs-vsctl --timeout=20 --db=unix:$work/$1/db.sock "${@:2}"; }
appctl() { /usr/bin/ovs-appctl --timeout=10 -t $work/$1/ovs-vswitchd.ctl "${@:2}"; }
txp() { ip netns exec $ns1 cat /sys/class/net/$1/statistics/tx_packets 2>/dev/null || echo 0; }

# measure PEER: prints "Gbit/s m0-packets m1-packets" (or "failed(...)")
measure() {
  local peer=$1 vs=$top/bin/ovs-vswitchd
  case $peer in ovs-*) vs=/usr/sbin/ovs-vswitchd ;; esac
  rm -rf $work/s1 $work/s2 $work/b; mkdir -p $work/b
  for n in $nsa $nsb $ns1 $ns2; do ip netns add $n || return 1; ip -n $n link set lo up; done
  ip -n $nsa link add eth0 type veth peer name pa netns $ns1
  ip -n $nsb link add eth0 type veth peer name pb netns $ns2
  ip -n $ns1 link add m0 type veth peer name n0 netns $ns2
  ip -n $ns1 link add m1 type veth peer name n1 netns $ns2
  for l in eth0:$nsa eth0:$nsb pa:$ns1 m0:$ns1 m1:$ns1 pb:$ns2 n0:$ns2 n1:$ns2; do ip -n ${l#*:} link set ${l%:*} up; done
  ip -n $nsa addr add 10.199.0.1/24 dev eth0
  ip -n $nsb addr add 10.199.0.2/24 dev eth0
  if [ ${peer%%-*} = ovs ]; then
    # OVS 3.1's userspace datapath passes neither checksum offload nor GSO.
    ip netns exec $nsa ethtool -K eth0 tx off >/dev/null 2>&1
    ip netns exec $nsb ethtool -K eth0 tx off >/dev/null 2>&1
  fi
  switch $work/s1 $ns1 $vs || return 1
  switch $work/s2 $ns2 $vs || return 1
  local i s
  for i in 1 2; do
    local pa=pa m0=m0 m1=m1 hw=02:00:00:00:c7:01
    [ $i = 2 ] && pa=pb m0=n0 m1=n1 hw=02:00:00:00:c7:02
    if [ ${peer#*-} = bond ]; then
      vsctl s$i add-br br0 -- set bridge br0 datapath_type=netdev other_config:hwaddr=$hw -- add-port br0 $pa \
        -- add-bond br0 bond0 $m0 $m1 lacp=active bond_mode=balance-tcp other_config:lacp-time=fast >&2
    else
      vsctl s$i add-br br0 -- set bridge br0 datapath_type=netdev other_config:hwaddr=$hw -- add-port br0 $pa \
        -- add-port br0 $m0 >&2
    fi
  done
  if [ ${peer#*-} = bond ]; then
    for i in $(seq 200); do
      s=$(appctl s1 bond/show bond0 2>/dev/null)
      [ "$(echo "$s" | grep -c ': enabled$')" = 2 ] && echo "$s" | grep -q 'lacp_status: negotiated' && break
      sleep 0.1
    done
    [ $i = 200 ] && { echo "failed(lacp)"; teardown; return; }
  fi
  for i in $(seq 100); do ip netns exec $nsa ping -c1 -W1 -q 10.199.0.2 >/dev/null 2>&1 && break; done
  ip netns exec $nsb iperf3 -s -1 -D -B 10.199.0.2 -I $work/b/iperf3.pid >&2
  for i in $(seq 50); do [ -s $work/b/iperf3.pid ] && break; sleep 0.1; done
  local t0=$(txp m0) t1=$(txp m1)
  local out
  out=$(ip netns exec $nsa iperf3 -c 10.199.0.2 -P $streams -t $secs -J 2>&1)
  local g=$(echo "$out" | python3 -c 'import json,sys
try: print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))
except Exception: print("failed(iperf3)")')
  echo "$g $(($(txp m0) - t0)) $(($(txp m1) - t1))"
  teardown
}

declare -A res m0s m1s
IFS=, read -ra plist <<< "$peers"
for r in $(seq $rounds); do
  order=("${plist[@]}")
  [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${plist[@]}" | tac))
  for pe in "${order[@]}"; do
    set -- $(measure $pe) 0 0
    echo "round $r $pe: $1 Gbit/s, member packets $2 / $3" >&2
    res[$pe]="${res[$pe]:-} $1"; m0s[$pe]="${m0s[$pe]:-} $2"; m1s[$pe]="${m1s[$pe]:-} $3"
  done
done
args=()
for pe in "${plist[@]}"; do args+=("$pe" "${res[$pe]}" "${m0s[$pe]}" "${m1s[$pe]}"); done
python3 - "$streams" "$secs" "${args[@]}" <<'PY'
import statistics, sys
streams, secs, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
def med(s):
    v = []
    for x in s.split():
        try: v.append(float(x))
        except ValueError: return None
    return statistics.median(v) if v else None
rows = {}
for i in range(0, len(rest), 4):
    rows[rest[i]] = (med(rest[i + 1]), med(rest[i + 2]), med(rest[i + 3]), rest[i + 1].split())
print("| iperf3 -P %s -t %s, Gbit/s (median) | Gbit/s | packets m0 / m1 (median) | runs |" % (streams, secs))
print("|---|---|---|---|")
for p, (g, a, b, runs) in rows.items():
    print("| %s | %s | %s / %s | %s |" % (p, "%.2f" % g if g else "n/a", "%.0f" % a if a is not None else "-",
                                      "%.0f" % b if b is not None else "-", " ".join(runs)))
def ratio(a, b):
    ga, gb = rows.get(a, (None,))[0], rows.get(b, (None,))[0]
    return "%.2fx" % (ga / gb) if ga and gb else "n/a"
print()
print("| ratio | |")
print("|---|---|")
for a, b in (("govs-bond", "govs-single"), ("ovs-bond", "ovs-single"), ("govs-bond", "ovs-bond"), ("govs-single", "ovs-single")):
    if a in rows and b in rows:
        print("| %s / %s | %s |" % (a, b, ratio(a, b)))
PY
